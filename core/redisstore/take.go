package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/window"
)

// Take implements [core.Counter] with one decision of the take script, sent
// in a round trip, and a script call, that may carry the decisions of other
// concurrent Takes (see the package documentation). It returns [ErrUnavailable] while the breaker of the
// caller's node is open, a wrapped Redis or context error if the node stops
// answering (see Config.Timeout) or ctx ends first (Redis may then have
// counted the request all the same), one that also wraps [core.ErrLate]
// when the node answered recently and its breaker is closed (and
// [core.ErrNotSent] too when the decision failed in the queue, unsent), a wrapped Redis error for this
// decision alone when its key holds what the script cannot count on (the
// other decisions of its script call are decided as usual), and
// an error for a cost below 1. A cost above [core.MaxLimit] is refused as
// any cost above the limits is.
func (c *counter) Take(ctx context.Context, key core.Key, cost int64, now time.Time) (core.Result, error) {
	if cost < 1 {
		return core.Result{}, errCost
	}
	// Above every limit the script can be given (see Bind), any cost is
	// refused alike: the script counts in 4 bytes and doubles, and is sent
	// no more than it can count.
	cost = min(cost, core.MaxLimit+1)
	return c.s.take(ctx, &request{head: c.head, tail: c.tail, key: key, limits: c.limits, cost: cost, now: now})
}

func (s *Store) take(ctx context.Context, req *request) (core.Result, error) {
	now := max(req.now.UnixMicro(), 0)
	var buf [128]byte
	key := string(appendKey(buf[:0], req))

	// While the breaker of the caller's node is open the store fails
	// open, and so does the cache: it answers only while Redis is thought
	// to answer too.
	nd := s.nodes.forKey(ctx, key)
	var ck cacheKey
	if s.cache != nil && nd.breaker.closed() {
		ck.key = key
		for i, r := range req.limits {
			ck.limits[i] = r.Limit
		}
		if res, ok := s.cache.lookup(&ck, now, req.cost); ok {
			s.stats.cacheHits.Add(1)
			return res, nil
		}
	}

	if err := ctx.Err(); err != nil {
		return core.Result{}, fmt.Errorf("redisstore: take: %w", err)
	}
	if err := s.admit(nd); err != nil {
		return core.Result{}, err
	}
	var gen uint64
	if ck.key != "" {
		gen = s.cache.gen(&ck)
	}
	at := s.scriptNow(req.now)
	var out [2 + 3*core.MaxLimits]int64
	n := len(req.limits)
	k, err := s.run(ctx, nd, newCall(key, at, req), out[:2+3*n])
	if err == nil && k != 2+n && k != 2+3*n {
		err = fmt.Errorf("script returned %d values, want %d or %d", k, 2+n, 2+3*n)
	}
	if err != nil {
		if s.late(nd, err) {
			if errors.Is(err, errStalled) {
				// Failed in the queue: never sent, never counted.
				return core.Result{}, fmt.Errorf("redisstore: take: %w (%w): %w", core.ErrLate, core.ErrNotSent, err)
			}
			return core.Result{}, fmt.Errorf("redisstore: take: %w: %w", core.ErrLate, err)
		}
		return core.Result{}, fmt.Errorf("redisstore: take: %w", err)
	}

	res := takeResult(out[:k], req.limits)
	if one := out[1+3*n]; !res.Allowed && one > 0 && ck.key != "" {
		s.cache.remember(&ck, now, req.cost, one, &res, gen)
	}
	return res, nil
}

// late reports whether err, the failure of a decision on node nd, is a
// late answer of a reachable node rather than a node that is down: the
// decision got no answer within its wait (Timeout, as [await] extends it)
// while the node's breaker is closed (fewer than BreakerFailures round
// trips in a row went unanswered), and the node answered before (a round
// trip, or [Store.Ping]). The limiter then decides the request in memory
// ([core.ErrLate]).
func (s *Store) late(nd *node, err error) bool {
	return (errors.Is(err, errNoAnswer) || errors.Is(err, errStalled)) && nd.breaker.closed() &&
		(nd.liveness.last.Load() != 0 || s.pinged.Load())
}

// takeResult reads out, the take script's answer to one decision on
// limits: 2+len(limits) values or 2+3*len(limits) (see takeScript), as
// v0.1.0's one-key script answers too. An admitted request's answer is
// short: each window resets a period from now and nothing waits; last
// comes the time it was counted at.
func takeResult(out []int64, limits []core.Rate) core.Result {
	n := len(limits)
	res := core.Result{Allowed: out[0] == 1 && len(out) == 2+n}
	if res.Allowed {
		res.At = out[1+n]
	}
	for i, r := range limits {
		st := core.LimitStatus{Rate: r}
		if res.Allowed {
			st.Remaining, st.Reset = out[1+i], r.Period
		} else {
			v := out[1+3*i:]
			st.Remaining, st.Reset, st.RetryAfter = v[0], time.Duration(v[1])*time.Microsecond, time.Duration(v[2])*time.Microsecond
		}
		res.Limits[i] = st
	}
	return res
}

var errNoLimits = fmt.Errorf("redisstore: request needs 1 to %d limits", core.MaxLimits)

var errCost = errors.New("redisstore: request cost must be at least 1")

// checkLimits rejects what the script cannot count: it needs 1 to
// [core.MaxLimits] limits, each of 1 to [core.MaxLimit] units (its sums
// are 4 bytes wide), over periods of a whole number of buckets of whole
// microseconds, as every valid core.Rate has.
func checkLimits(limits []core.Rate) error {
	if len(limits) == 0 || len(limits) > core.MaxLimits {
		return errNoLimits
	}
	for _, r := range limits {
		if r.Limit < 1 || r.Limit > core.MaxLimit {
			return fmt.Errorf("redisstore: limit %d: want 1 to %d", r.Limit, core.MaxLimit)
		}
		if r.Period <= 0 || r.Period%(window.Buckets*time.Microsecond) != 0 {
			return fmt.Errorf("redisstore: period %s: want a positive multiple of %s", r.Period, window.Buckets*time.Microsecond)
		}
	}
	return nil
}

// newCall returns a call from callPool for the script with req's arguments.
func newCall(key string, now int64, req *request) *call {
	c := callPool.Get().(*call)
	c.key, c.lua, c.multi = key, takeLua, true
	var longest time.Duration
	b := c.packed[:0]
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(now)))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(req.cost)))
	for _, r := range req.limits {
		longest = max(longest, r.Period)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(r.Period/time.Microsecond)))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(r.Limit)))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(window.ShapeOf(r.Period).Unit/int64(time.Microsecond))))
	}
	c.ttl = int64((valueTTL(longest) + time.Millisecond - 1) / time.Millisecond)
	c.args[0], c.args[1], c.args[2], c.args[3] = "evalsha", &takeSHA, "1", &c.key
	c.args[4], c.args[5] = c.views[len(req.limits)-1], &c.ttl
	c.n = 6
	return c
}

// A counter is the store bound to one scope and kind of caller with fixed
// limits.
type counter struct {
	s          *Store
	head, tail string
	limits     []core.Rate
}

// Bind implements [core.Store]. It returns an error for limits the
// script cannot count: none, more than [core.MaxLimits], a limit outside 1
// to [core.MaxLimit], or a period that is not a positive multiple of 20µs.
func (s *Store) Bind(scope string, _ core.Kind, limits []core.Rate) (core.Counter, error) {
	if err := checkLimits(limits); err != nil {
		return nil, err
	}
	head, tail := keyParts(s.prefix, scope, limits)
	return &counter{s: s, head: head, tail: tail, limits: slices.Clone(limits)}, nil
}

// takeSHA is takeScript's SHA-1, read once.
var takeSHA = takeScript.Hash()
