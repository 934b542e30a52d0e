package redisstore

import (
	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// Gather makes the senders of s wait, up to 20ms a call, until n calls are
// queued before they send a batch, so that a test's concurrent decisions
// share a script call however the goroutines are scheduled. It must be
// called before s decides anything.
func Gather(s *Store, n int) {
	s.gather = n
	s.nodes.all.gather = n
}

// Slot returns key's cluster hash slot as the store computes it.
func Slot(key string) int { return slot(key) }

// TakeCommand returns the key and the ARGV of the take script for req, as
// s sends them: the arguments of a lone call of v0.1.0's script too.
func TakeCommand(s *Store, req storecall.Request) (string, []any) {
	head, tail := keyParts(s.prefix, req.Scope, req.Limits)
	r := &request{head: head, tail: tail, key: req.Caller.Key(), limits: req.Limits, cost: req.Cost, now: req.Now}
	key := string(appendKey(nil, r))
	c := newCall(key, s.scriptNow(req.Now), r)
	defer c.release()
	return key, []any{string(c.args[4].([]byte)), c.ttl}
}

// TakeResult reads out, an answer of the take script (or of v0.1.0's) to
// one decision on limits, as Take reads it.
func TakeResult(out []int64, limits []core.Rate) core.Result { return takeResult(out, limits) }

// TakeScript returns the take script, which decides a batch.
func TakeScript() *redis.Script { return takeScript }
