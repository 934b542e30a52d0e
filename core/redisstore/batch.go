package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/core"
)

// call is one decision on its way to Redis: the EVALSHA command, built in
// place, and the answer. A Take owns its call until it queues it; the sender
// owns it from then until it signals done; the Take owns it again once it
// has received from done, and returns it to callPool unless the call is
// lost. A call whose Take gave up (its context ended) or whose command may
// still be read by a go-redis goroutine (lost: it was abandoned unanswered)
// is left to the garbage collector.
//
// The arguments point into the call (go-redis writes *string and *int64 as
// their values), so that building a command boxes nothing: a pointer fits in
// an interface without an allocation.
type call struct {
	// args is the command: "evalsha", the script's SHA-1, "1", &key, then
	// the script's ARGV; n of them are used.
	args [4 + numArgs]any
	n    int
	key  string
	// nums are the balance script's ARGV: see balance.go.
	nums [numArgs]int64
	// packed is the take script's ARGV[1] (see takeScript): now (µs, or
	// serverClock), cost, then a period
	// (µs), a limit and a unit of Prev (µs) per window, as little-endian
	// doubles; views holds it boxed as an argument, a slice per number of
	// windows, made once with the call so that building a command boxes
	// nothing. ttl is ARGV[2], the value's time to live (ms).
	packed [8 * (2 + 3*core.MaxLimits)]byte
	views  [core.MaxLimits]any
	ttl    int64
	// lua is the source of the script the command runs, for EVAL.
	lua string

	ctx context.Context // the caller's: its end means the caller left

	// multi says that the script decides a batch (takeScript): the call
	// may share its command with other decisions. val is the call's own
	// answer (see split): the script's list, or for a take decision the
	// error Redis replied to its commands.
	multi bool
	val   any

	cmd  *redis.Cmd
	err  error         // set instead of cmd when the call got no answer
	lost bool          // go-redis may still read args: never reuse the call
	done chan struct{} // capacity 1: the sender never blocks on it
}

// release returns c to callPool, unless it is lost. Only the Take that
// received from c.done may call it.
func (c *call) release() {
	if c.lost {
		return
	}
	c.ctx, c.cmd, c.err, c.key, c.val, c.multi = nil, nil, nil, "", nil, false
	callPool.Put(c)
}

// numArgs is the most ARGV the script takes.
const numArgs = 2 + 3*core.MaxLimits

var callPool = sync.Pool{New: func() any {
	c := &call{done: make(chan struct{}, 1)}
	for i := range c.views {
		c.views[i] = c.packed[:8*(2+3*(i+1))]
	}
	return c
}}

// failure returns the error c met, or nil if Redis answered its decision.
// Only the Take that received from c.done, or the sender before it signals
// done, may call it.
func (c *call) failure() error {
	if c.err != nil {
		return c.err
	}
	if err := c.cmd.Err(); err != nil {
		return err
	}
	err, _ := c.val.(error)
	return err
}

// finish hands the answer back to the waiting Take. The sender must not touch
// c afterwards.
func (c *call) finish() { c.done <- struct{}{} }

// fail finishes c without an answer.
func (c *call) fail(err error) {
	c.err = err
	c.finish()
}

// timeoutError is an error that says it is a timeout, as net.Error does.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

// Timeout reports true.
func (e *timeoutError) Timeout() bool { return true }

// errNoAnswer is the error of the decisions of a batch that Redis did not
// answer within Timeout: the store gave up on it, whatever the client's own
// timeouts.
var errNoAnswer error = &timeoutError{"no answer within Timeout"}

// errStalled is the error of the decisions that were waiting for a batch
// when their node stopped answering.
var errStalled error = &timeoutError{"the Redis node stopped answering while the decision waited for its batch"}

// send runs the decisions of live in one pipeline on client (one round trip
// per node): the take decisions that may share a script call (see
// grouping) as one EVALSHA of takeScript each, the others as one command
// each; with EVAL again for the commands that found the script missing
// (NOSCRIPT, after a restart or SCRIPT FLUSH) and through fallback again
// for those that met a redirection (MOVED or ASK, see nodes). NOSCRIPT and
// a redirection are answered before the script runs, so nothing is counted
// twice. It waits for the answers as [await] says, and reports how many
// round trips and commands it made and whether the node stalled: it gave
// up waiting while the node answered no other round trip either (then
// every call of live holds errNoAnswer and is lost, because go-redis may
// still be writing its command; they do also when the node answered
// others, as when one connection went silent: then the node has not
// stalled), or the round trip ended with no reply to any call (an error
// reply is a reply, see replied).
//
// An answer that comes after send gave up on it calls late: the node is
// alive, only late (see node.lateAnswer).
func send(client, fallback redis.UniversalClient, by grouping, live []*call, timeout time.Duration, node *liveness, w *workers, late func()) (trips, cmds int, sent time.Time, stalled bool) {
	// The goroutine may outlive send, and the caller reuses live.
	live = append([]*call(nil), live...)
	groups := compose(by, live)
	ctx, cancel := context.WithTimeout(context.Background(), ceiling(timeout))
	done := make(chan int, 1)
	sent = time.Now()
	// state: 0 while waiting, 1 once answered in time, 2 once send gave up.
	var state atomic.Int32
	w.run(func() {
		defer cancel()
		trips := 1
		pipe := client.Pipeline()
		for i := range groups {
			g := &groups[i]
			g.cmd = redis.NewCmd(ctx, g.args...)
			_ = pipe.Process(ctx, once{g.cmd}) // queues: Exec reports the errors
		}
		_, _ = pipe.Exec(ctx) // each command holds its own error
		var noScript, moved []*group
		for i := range groups {
			g := &groups[i]
			switch err := g.cmd.Err(); {
			case err == nil:
			case redis.HasErrorPrefix(err, "NOSCRIPT"):
				noScript = append(noScript, g)
			case redirected(err):
				moved = append(moved, g)
			}
		}
		if moved != nil && fallback != client {
			trips++
			pipe := fallback.Pipeline()
			for _, g := range moved {
				g.cmd = redis.NewCmd(ctx, g.args...)
				_ = pipe.Process(ctx, once{g.cmd})
			}
			_, _ = pipe.Exec(ctx)
			for _, g := range moved {
				if redis.HasErrorPrefix(g.cmd.Err(), "NOSCRIPT") {
					noScript = append(noScript, g)
				}
			}
		}
		if noScript != nil {
			trips++
			pipe := fallback.Pipeline()
			for _, g := range noScript {
				g.cmd = redis.NewCmd(ctx, evalArgs(g.args, g.calls[0].lua)...)
				_ = pipe.Process(ctx, once{g.cmd})
			}
			_, _ = pipe.Exec(ctx)
		}
		for i := range groups {
			g := &groups[i]
			if len(g.calls) > 1 && redis.HasErrorPrefix(g.cmd.Err(), "TRYAGAIN") {
				// A cluster moving the slot holds some of the keys and
				// not others, and ran nothing: each decision alone,
				// through the cluster's client, which follows ASK.
				for _, c := range g.calls {
					trips++
					split(process(ctx, fallback, c.args[:c.n], c.lua), []*call{c})
				}
				continue
			}
			split(g.cmd, g.calls)
		}
		node.answered(live, sent)
		if !state.CompareAndSwap(0, 1) && anyAnswered(live) {
			late()
		}
		done <- trips
	})
	trips, ok := await(context.Background(), done, sent, timeout, node)
	if ok {
		return trips, len(groups), sent, !anyAnswered(live)
	}
	state.CompareAndSwap(0, 2)
	for _, c := range live {
		c.err, c.lost = fmt.Errorf("%w (%s)", errNoAnswer, timeout), true
	}
	return 1, len(groups), sent, node.silentSince(sent)
}

// once is a command that go-redis must not send again after a network
// error (its retries, Options.MaxRetries): Redis may have run it before the
// connection failed, and a script call that ran twice would count its
// decisions twice. A pipeline that holds one is not retried at all. The
// store's own breaker and Timeout deal with a node that fails.
type once struct{ *redis.Cmd }

// NoRetry reports true: go-redis does not retry the command.
func (once) NoRetry() bool { return true }

// process sends the script command args (EVALSHA) alone on client, and
// sends it again with EVAL, the script's source lua, if Redis answers
// NOSCRIPT, as redis.Script.Run does; never more than once otherwise (see
// once).
func process(ctx context.Context, client redis.UniversalClient, args []any, lua string) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	_ = client.Process(ctx, once{cmd})
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = redis.NewCmd(ctx, evalArgs(args, lua)...)
		_ = client.Process(ctx, once{cmd})
	}
	return cmd
}

// evalArgs returns a copy of the script command args (EVALSHA SHA ...) as
// EVAL with the script's source lua, for a server that answered NOSCRIPT.
func evalArgs(args []any, lua string) []any {
	eval := make([]any, len(args))
	copy(eval, args)
	eval[0], eval[1] = "eval", lua
	return eval
}

// group is one command of a batch: a script call for the decisions of
// calls, with args.
type group struct {
	args  []any
	calls []*call
	cmd   *redis.Cmd
	multi bool // a call of takeScript
	at    int  // the slot or the hash tag's index in the batch (see grouping)
}

// compose turns the calls of a batch into commands: each take decision
// joins the first command of the batch whose keys it may share a script
// call with (see grouping), so that decisions keep their order within a
// command, and the other calls are commands of their own, in the order of
// live. It allocates per batch, not per call, but for the arguments of
// commands that carry several decisions.
func compose(by grouping, live []*call) []group {
	groups := make([]group, 0, len(live))
	// of[i] is the group of live[i]; count, after it, the calls of each
	// group, then where its calls start in order.
	ints := make([]int, 2*len(live)+1)
	of := ints[:len(live)]
	var tags []string // byTag: the hash tags seen, indexed by group.at
	for i, c := range live {
		at, g := -1, -1
		if c.multi {
			switch by {
			case oneCall:
				at = 0
			case bySlot:
				at = slot(c.key)
			case byTag:
				tag := hashTag(c.key)
				for j, t := range tags {
					if t == tag {
						at = j
						break
					}
				}
				if at < 0 {
					at = len(tags)
					tags = append(tags, tag)
				}
			}
			for j := range groups {
				if groups[j].multi && groups[j].at == at {
					g = j
					break
				}
			}
		}
		if g < 0 {
			g = len(groups)
			groups = append(groups, group{multi: c.multi, at: at})
		}
		of[i] = g
	}
	count := ints[len(live) : len(live)+len(groups)+1]
	for _, g := range of {
		count[g+1]++
	}
	for g := range groups {
		count[g+1] += count[g]
	}
	order := make([]*call, len(live))
	for g := range groups {
		groups[g].calls = order[count[g]:count[g]:count[g+1]]
	}
	for i, c := range live {
		g := &groups[of[i]]
		g.calls = append(g.calls, c)
	}
	for k := range groups {
		g := &groups[k]
		if !g.multi || len(g.calls) == 1 {
			g.args = g.calls[0].args[:g.calls[0].n]
			continue
		}
		// evalsha SHA numkeys key... then each decision's two ARGV.
		m := len(g.calls)
		g.args = make([]any, 3+3*m)
		g.args[0], g.args[1], g.args[2] = "evalsha", g.calls[0].args[1], m
		for i, c := range g.calls {
			g.args[3+i] = &c.key
			g.args[3+m+2*i], g.args[4+m+2*i] = c.args[4], c.args[5]
		}
	}
	return groups
}

// split hands the answer of cmd, a command for calls, to each of them: cmd
// itself, and in val its own answer: the script's answer for a command of
// one call that is not a take decision, and for take decisions (multi)
// each one's in the script's list of answers, in the order of calls.
func split(cmd *redis.Cmd, calls []*call) {
	for _, c := range calls {
		c.cmd = cmd
	}
	if cmd.Err() != nil {
		return
	}
	if !calls[0].multi {
		calls[0].val = cmd.Val()
		return
	}
	vals, ok := cmd.Val().([]any)
	if !ok || len(vals) != len(calls) {
		err := fmt.Errorf("script returned %d answers for %d decisions", len(vals), len(calls))
		for _, c := range calls {
			c.val = err
		}
		return
	}
	for i, c := range calls {
		c.val = vals[i]
	}
}

// workers runs the round trips of a node's batches on goroutines that
// outlive a batch: one waits up to senderIdle for the next round trip
// before it exits, so that a node that keeps deciding does not start a
// goroutine, and grow its stack, per batch (ADR 0006). A round trip that
// hangs keeps its goroutine, and the next one gets another.
type workers struct {
	jobs chan func() // unbuffered: a job is taken only by an idle worker
}

// run runs job on an idle worker, or on a new one if none is idle.
func (w *workers) run(job func()) {
	select {
	case w.jobs <- job:
	default:
		go w.work(job)
	}
}

// work runs job, then the jobs it is given, until it has waited senderIdle
// for one.
func (w *workers) work(job func()) {
	var idle *time.Timer
	for {
		job()
		if idle == nil {
			idle = time.NewTimer(senderIdle)
		} else {
			idle.Reset(senderIdle)
		}
		select {
		case job = <-w.jobs:
			idle.Stop()
		case <-idle.C:
			return
		}
	}
}

// ceiling is the longest the store waits for a round trip, and the
// deadline of its context, which reaches the socket when the client has
// ContextTimeoutEnabled: 40 × timeout, and at least 10s, far past timeout,
// so that a process too slow to read an answer in time does not turn it
// into a failure (ADR 0007), but bounded, so that a wait ends whatever the
// process measures of its own lag, and a command the store gave up on does
// not hold its connection for ever. A server whose goroutines wait 10s for
// a CPU no longer serves its callers anyway.
func ceiling(timeout time.Duration) time.Duration {
	return max(40*timeout, 10*time.Second)
}

// liveness is when a node last answered (an error reply counts, see
// replied), so that a round trip that goes unanswered can tell a node that
// stalled, whose queue is failed, from a connection that went silent while
// the node answers on others (a NAT that dropped the connection's state),
// which fails that round trip's decisions alone.
type liveness struct {
	last atomic.Int64 // time.Time.UnixNano of the last answer
	// lastSent is when the round trip of the last answer was sent: an
	// answer to a round trip sent no later than another's says that one
	// may be queued behind it at Redis; an answer to a later one, that it
	// has been overtaken.
	lastSent atomic.Int64
}

// answered notes an answer if Redis answered a call of live, a round trip
// sent at sent.
func (l *liveness) answered(live []*call, sent time.Time) {
	if anyAnswered(live) {
		l.note(sent)
	}
}

// note notes an answer, now, to a round trip sent at sent.
func (l *liveness) note(sent time.Time) {
	l.lastSent.Store(sent.UnixNano())
	l.last.Store(time.Now().UnixNano())
}

// silentSince reports whether the node has answered nothing since sent.
func (l *liveness) silentSince(sent time.Time) bool {
	return !time.Unix(0, l.last.Load()).After(sent)
}

// await waits for the end of a round trip sent at sent (a value on done),
// for ctx to end, or until Redis has had timeout to answer it. It reports
// false when it stopped waiting without an answer.
//
// A node that answers the round trips sent before this one is busy, and
// this one waits its turn: due moves to timeout after each such answer.
// An answer to a round trip sent after this one moves due once, so that a
// connection that went silent costs its decisions about timeout, not the
// socket's read timeout. Timeout is
// counted on Redis's side rather than on the progress of our own
// goroutines (ADR 0006): an answer that Redis sent in time is read by a
// goroutine woken by the network, which waits for a CPU as long as the
// process lags behind. lag is the worst lag (see lag) the process showed
// at the checks of this wait, one when the timer fires at due and one
// every timeout/4 after; a check that measures under
// timeout/8 without a run-queue backlog finds the process on time. await
// gives up at the first check that finds the process on time at or after
// due + 2 x lag (it caught up, and the answer is still missing); at a
// check that finds it lagging, only at or after due + 4 x lag and 4 x
// timeout after the round trip was sent (the bound of ADR 0007, kept as a
// floor: the lag it measures may be short of the reader's); and at ceiling
// whatever happens. A process that is not slowed thus gives up at about
// timeout.
func await[T any](ctx context.Context, done <-chan T, sent time.Time, timeout time.Duration, node *liveness) (T, bool) {
	limit := sent.Add(ceiling(timeout))
	var zero T
	due := sent.Add(timeout)
	overtaken := false
	fires := due // when the timer is set to fire
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var meter lag
	var worst time.Duration
	for {
		select {
		case v := <-done:
			return v, true
		case <-ctx.Done():
			return zero, false
		case <-timer.C:
		}
		// Measuring yields: a goroutine with an answer may run first.
		behind, backlog := meter.measure(time.Since(fires))
		select {
		case v := <-done:
			return v, true
		default:
		}
		now := time.Now()
		// A node that keeps answering the round trips sent before this
		// one is busy, not gone: this one may wait its turn, timeout after
		// each such answer. Once a round trip sent later is answered, this
		// one has been overtaken (its connection went silent, say): it
		// gets timeout after that answer, once, and no more.
		if last := time.Unix(0, node.last.Load()); last.After(sent) && last.Add(timeout).After(due) {
			if !time.Unix(0, node.lastSent.Load()).After(sent) {
				due = last.Add(timeout)
			} else if !overtaken {
				overtaken, due = true, last.Add(timeout)
			}
		}
		lagging := behind > timeout/8 || backlog
		if lagging {
			worst = max(worst, behind, timeout/8)
		}
		end := due.Add(2 * worst)
		if lagging {
			end = due.Add(4 * worst)
			if floor := sent.Add(4 * timeout); floor.After(end) {
				end = floor
			}
		}
		if !end.After(now) || !now.Before(limit) {
			return zero, false
		}
		// The node answered since, or we lag: wait on, and look again
		// soon, as the lag changes when the process catches up.
		fires = now.Add(timeout / 4)
		if end.Before(fires) {
			fires = end
		}
		if limit.Before(fires) {
			fires = limit
		}
		timer.Reset(fires.Sub(now))
	}
}

// ownFault reports whether err, a decision's error, concerns its key
// alone: Redis found the key of another type (WRONGTYPE), or the take
// script could not count on its value (RATESCOPE, see takeScript). The
// node answered, and is healthy for every other key: such an error fails
// its decision and never counts against the node's breaker.
func ownFault(err error) bool {
	return redis.HasErrorPrefix(err, "WRONGTYPE") || redis.HasErrorPrefix(err, "RATESCOPE")
}

// redirected reports whether err is a cluster redirection: the key's slot
// lives on another master (MOVED) or is moving there (ASK).
func redirected(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK"))
}

// anyAnswered reports whether Redis replied to at least one call of live,
// if only with an error (see replied). Only the goroutine that ran the
// pipeline, or one that received its end, may call it.
func anyAnswered(live []*call) bool {
	for _, c := range live {
		if replied(c.cmd.Err()) {
			return true
		}
	}
	return false
}

// replied reports whether a command that ended with err got a reply from
// Redis: no error, or an error reply (OOM, WRONGTYPE, NOSCRIPT, MOVED, ...),
// as opposed to no reply at all (a network error, a deadline, a closed
// client). A node that replies is alive: stall detection and liveness count
// error replies as answers. The breaker does not: for it a decision that
// met an error failed (see node.send).
func replied(err error) bool {
	var re redis.Error
	return err == nil || errors.As(err, &re)
}
