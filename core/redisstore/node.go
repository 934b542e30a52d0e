package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// node is the store's way to one Redis node: the master of a cluster that
// holds a key, or the one server (or Ring, or Sentinel master) of any other
// client. Each node has its own circuit breaker and its own queue of
// decisions and senders, so that a node that fails or stalls holds up only
// the callers whose keys live on it.
//
// Decisions queue while a batch is in flight and are sent by at most
// senders goroutines, max at a time; a decision that finds no batch in
// flight is sent at once. A batch waits at most timeout for Redis, from
// when it is sent: time spent queued while the node keeps answering does
// not count, so a burst on a healthy node is counted however long its
// queue. When a batch goes unanswered for timeout, its decisions fail; if
// the node answered no other batch meanwhile, it has stalled: every
// decision waiting for it fails at once (they would wait for a node that
// does not answer), and so do they when the breaker opens. A batch lost on
// one silent connection, while the node answers on the others, fails its
// own decisions only.
//
// The queue holds at most maxQueue decisions. A Take that finds it full
// waits for room (backpressure) until the node answers and a sender takes
// decisions out of it, the node stalls, or its context ends.
type node struct {
	addr     string                // for logs; "" for the only node of a store
	client   redis.UniversalClient // the node's own, or the store's
	fallback redis.UniversalClient // the store's: follows redirections
	by       grouping              // which decisions may share a script call
	max      int                   // calls per batch
	senders  int                   // batches in flight at most
	// gather, set by tests only (export_test.go), is how many calls a
	// sender waits for, up to gatherWait each, before it sends a batch:
	// so that the conformance suite's decisions share script calls.
	gather   int
	timeout  time.Duration
	breaker  breaker
	liveness liveness
	counters *tally
	answered func() // told of every batch Redis answered
	// lastFailure is when a failed round trip was last recorded (Unix
	// nanoseconds): see record.
	lastFailure atomic.Int64

	room    chan struct{} // a token per queued call: capacity maxQueue
	workers workers       // run the round trips

	mu      sync.Mutex
	queue   []*call
	running int           // sender goroutines
	idle    int           // of them, those waiting for a call (see run)
	wake    chan struct{} // capacity 1: a call was queued for an idle sender
	flushed chan struct{} // closed when the queue is failed (stall or open breaker)
}

// senderIdle is how long a sender waits for more calls once the queue is
// empty, before it exits: a node that keeps deciding keeps its senders, and
// does not pay for a new goroutine per batch; an idle store soon runs none.
const senderIdle = 100 * time.Millisecond

// gatherWait is how long a sender waits for each call of node.gather.
const gatherWait = 20 * time.Millisecond

// tally holds a store's statistics, shared by its nodes.
type tally struct {
	calls, commands, trips, failures, failedFast, cacheHits, waited atomic.Int64
}

// do queues c and waits for its answer, or for ctx to end. It starts a
// sender if fewer than senders are running, so a call that finds no batch
// in flight is sent at once. It returns an error only when c was not
// answered and the caller may not touch it again; c may then have been the
// breaker's trial call, which another may now make.
func (n *node) do(ctx context.Context, c *call) error {
	select {
	case n.room <- struct{}{}:
	default:
		if err := n.waitForRoom(ctx); err != nil {
			n.breaker.abandoned()
			return err
		}
	}
	n.mu.Lock()
	n.queue = append(n.queue, c)
	wake := n.idle > 0
	start := !wake && n.running < n.senders
	if start {
		n.running++
	}
	n.mu.Unlock()
	switch {
	case wake:
		select {
		case n.wake <- struct{}{}:
		default: // a wake-up is already on its way: its sender takes c too
		}
	case start:
		go n.run()
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		n.breaker.abandoned()
		return ctx.Err()
	}
}

// waitForRoom waits until the queue has room for one more call and takes it,
// or fails if the queue is flushed (the node stalled or the breaker opened)
// or ctx ends first.
func (n *node) waitForRoom(ctx context.Context) error {
	n.counters.waited.Add(1)
	n.mu.Lock()
	flushed := n.flushed
	n.mu.Unlock()
	select {
	case n.room <- struct{}{}:
		return nil
	case <-flushed:
		if !n.breaker.closed() {
			return n.breaker.openErr
		}
		return fmt.Errorf("%w (%s)", errStalled, n.timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run sends batches while calls are queued, waits for more up to
// senderIdle once the queue is empty, then exits.
func (n *node) run() {
	batch := make([]*call, 0, n.max)
	var idle *time.Timer
	gathered := 0
	for {
		n.mu.Lock()
		k := min(len(n.queue), n.max)
		if k > 0 && k < n.gather && gathered < n.gather-1 {
			// Tests only: wait a little for the batch to fill.
			gathered++
			n.waitForCalls(&idle, gatherWait)
			n.mu.Unlock()
			continue
		}
		gathered = 0
		if k == 0 {
			if !n.waitForCalls(&idle, senderIdle) {
				n.running--
				n.mu.Unlock()
				return
			}
			n.mu.Unlock()
			continue
		}
		batch = append(batch[:0], n.queue[:k]...)
		rest := copy(n.queue, n.queue[k:])
		clear(n.queue[rest:])
		n.queue = n.queue[:rest]
		n.mu.Unlock()
		for range k {
			<-n.room
		}
		n.send(batch)
		clear(batch)
	}
}

// waitForCalls waits, with n.mu held on entry and on return, until a call
// is queued or d has passed. It reports whether a call is queued. timer is
// the caller's, made on first use.
func (n *node) waitForCalls(timer **time.Timer, d time.Duration) bool {
	n.idle++
	n.mu.Unlock()
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	select {
	case <-n.wake:
		(*timer).Stop()
	case <-(*timer).C:
	}
	n.mu.Lock()
	n.idle--
	return len(n.queue) > 0
}

// send runs one batch: calls whose caller left are dropped, the others go
// in one pipeline. It records the outcome for the breaker and the stats,
// and fails the queue if the node stalled or the breaker opened.
func (n *node) send(batch []*call) {
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.fail(err)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		n.breaker.abandoned()
		return
	}
	trips, cmds, sent, stalled := send(n.client, n.fallback, n.by, live, n.timeout, &n.liveness, &n.workers, n.lateAnswer)
	n.counters.commands.Add(int64(cmds))
	var err error
	failed := 0
	answered := false
	for _, c := range live {
		switch e := c.failure(); {
		case e == nil:
			answered = true
		case ownFault(e):
			failed++
			answered = true // the node answered: the fault is the key's
		default:
			failed++
			err = e
		}
	}
	if answered {
		err = nil
	}
	opened := n.record(trips, err, failed, sent)
	for _, c := range live {
		c.finish()
	}
	switch {
	case opened:
		n.flush(n.breaker.openErr)
	case stalled:
		n.flush(fmt.Errorf("%w (%s)", errStalled, n.timeout))
	}
}

// flush fails every queued call with err and wakes the Takes waiting for
// room, which fail too.
func (n *node) flush(err error) {
	n.mu.Lock()
	queued := n.queue
	n.queue = nil
	close(n.flushed)
	n.flushed = make(chan struct{})
	n.mu.Unlock()
	for range queued {
		<-n.room
	}
	for _, c := range queued {
		c.fail(err)
	}
	// One of them may have been the breaker's trial call: let another go.
	n.breaker.abandoned()
}

// record counts the outcome of a batch of calls: trips round trips (one per
// pipeline), the error that all of them met or nil if Redis answered some
// (an error of a decision's own, see ownFault, is an answer), and how many
// calls failed. The breaker sees one success or one failure per
// batch, so that it opens after BreakerFailures batches fail however many
// decisions each carried. It reports whether the breaker opened.
//
// Round trips that were in flight together and went unanswered in the same
// stall are one failure: a failed round trip sent before the last failure
// was recorded does not count again. So the breaker opens after
// BreakerFailures stalls one after the other, not after the batches of one
// burst that a loaded machine answered late.
func (n *node) record(trips int, err error, failed int, sent time.Time) bool {
	n.counters.trips.Add(int64(trips))
	n.counters.failures.Add(int64(failed))
	if err != nil {
		if !sent.After(time.Unix(0, n.lastFailure.Load())) {
			return false
		}
		n.lastFailure.Store(time.Now().UnixNano())
		return n.breaker.failed(err)
	}
	n.breaker.succeeded()
	n.answered()
	return false
}

// lateAnswer is told of an answer that came after the store gave up on its
// round trip: the node is alive, and late, not down. It counts as a
// success for the breaker, which closes if it had opened meanwhile.
func (n *node) lateAnswer() {
	n.breaker.succeeded()
}

// doAlone runs c from the caller's goroutine, as a lone command: the path of
// MaxBatch 1. The wait ends as [await] says, or when ctx ends. The answer,
// or the error, is in c.
func (n *node) doAlone(ctx context.Context, c *call) {
	done := make(chan *redis.Cmd, 1)
	runCtx, cancel := context.WithTimeout(context.Background(), ceiling(n.timeout))
	sent := time.Now()
	go func() {
		defer cancel()
		cmd := process(runCtx, n.client, c.args[:c.n], c.lua)
		if redirected(cmd.Err()) {
			cmd = process(runCtx, n.fallback, c.args[:c.n], c.lua)
		}
		if replied(cmd.Err()) {
			n.liveness.note(sent)
		}
		done <- cmd
	}()
	cmd, ok := await(ctx, done, sent, n.timeout, &n.liveness)
	switch {
	case ok:
		split(cmd, []*call{c})
	case ctx.Err() != nil:
		c.err, c.lost = ctx.Err(), true
	default:
		c.err, c.lost = fmt.Errorf("%w (%s)", errNoAnswer, n.timeout), true
	}
	n.counters.commands.Add(1)
	err := c.failure()
	switch {
	case err == nil:
		n.record(1, nil, 0, sent)
	case ownFault(err):
		n.record(1, nil, 1, sent)
	case ctx.Err() != nil:
		n.counters.trips.Add(1)
		n.breaker.abandoned()
	default:
		n.record(1, err, 1, sent)
	}
}
