package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/window"
)

// call is one decision on its way to Redis: the EVALSHA command, built in
// place, and the answer. A Take owns its call until it queues it; the sender
// owns it from then until it signals done; the Take owns it again once it
// has received from done, and returns it to callPool. A call whose Take gave
// up (its context ended) is left to the garbage collector, since the sender
// may still hold it.
//
// The arguments point into the call (go-redis writes *string and *int64 as
// their values), so that building a command boxes nothing: a pointer fits in
// an interface without an allocation.
type call struct {
	// args is the command: "evalsha", the script's SHA-1, "1", &key, then
	// pointers to nums; n of them are used.
	args [4 + numArgs]any
	n    int
	key  string
	// nums are the script's ARGV: now (µs, or -1 for the server's clock),
	// cost, then a period (µs), a limit and a unit of Prev (µs) per window (see balance.go for the balance script's).
	nums [numArgs]int64
	// script is the script the command runs, lua its source for EVAL.
	script *redis.Script
	lua    string

	ctx      context.Context // the caller's: its end means the caller left
	deadline time.Time       // when the caller stops waiting: start + Timeout

	cmd  *redis.Cmd
	err  error         // set instead of cmd when the call was not sent
	done chan struct{} // capacity 1: the sender never blocks on it
}

// newCall returns a call from callPool for the script with req's arguments.
func newCall(key string, now int64, req *core.Request) *call {
	c := callPool.Get().(*call)
	c.key, c.script, c.lua = key, takeScript, takeLua
	c.nums[0], c.nums[1] = now, req.Cost
	c.args[0], c.args[1], c.args[2], c.args[3] = "evalsha", &takeSHA, "1", &c.key
	n := 2
	for _, r := range req.Limits {
		c.nums[n], c.nums[n+1], c.nums[n+2] = int64(r.Period/time.Microsecond), r.Limit, window.ShapeOf(r.Period).Unit/int64(time.Microsecond)
		n += 3
	}
	for i := range n {
		c.args[4+i] = &c.nums[i]
	}
	c.n = 4 + n
	return c
}

// release returns c to callPool. Only the Take that received from c.done may
// call it.
func (c *call) release() {
	c.ctx, c.cmd, c.err, c.key = nil, nil, nil, ""
	callPool.Put(c)
}

// numArgs is the most ARGV the script takes.
const numArgs = 2 + 3*core.MaxLimits

// takeSHA is takeScript's SHA-1, read once.
var takeSHA = takeScript.Hash()

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// finish hands the answer back to the waiting Take. The sender must not touch
// c afterwards.
func (c *call) finish() { c.done <- struct{}{} }

// batcher sends the calls of concurrent Takes to Redis together: one
// pipeline, so one write and one read per server, for all the calls that
// queued while the previous batch was in flight. It runs at most senders
// goroutines, each sending one batch at a time, and only while calls are
// waiting: a sender that finds the queue empty exits, so an idle store runs
// no goroutine.
type batcher struct {
	client  redis.UniversalClient
	max     int // calls per batch
	senders int // batches in flight at most

	mu      sync.Mutex
	queue   []*call
	running int // sender goroutines

	// record learns the outcome of a batch: how many round trips it made,
	// the error of the last one if it answered no call, and how many calls
	// failed. abandon learns that a batch sent nothing because every caller
	// had left.
	record  func(trips int, err error, failed int)
	abandon func()
}

// do queues c and waits for its answer, or for ctx to end. It starts a
// sender if fewer than senders are running, so a call that finds no batch in
// flight is sent at once.
func (b *batcher) do(ctx context.Context, c *call) error {
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.running < b.senders
	if start {
		b.running++
	}
	b.mu.Unlock()
	if start {
		go b.run()
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run sends batches until the queue is empty, then exits.
func (b *batcher) run() {
	batch := make([]*call, 0, b.max)
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		batch = append(batch[:0], b.queue[:n]...)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		b.send(batch)
		clear(batch)
	}
}

// send runs one batch: calls whose caller left are dropped, calls whose
// deadline passed in the queue fail without being sent, the others go in one
// pipeline bounded by the earliest deadline among them. Commands that find
// the script missing (NOSCRIPT, after a restart or SCRIPT FLUSH) are sent
// again with EVAL in a second pipeline.
func (b *batcher) send(batch []*call) {
	now := time.Now()
	var deadline time.Time
	live := batch[:0]
	expired := 0
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			c.finish()
			continue
		}
		if !now.Before(c.deadline) {
			c.err = context.DeadlineExceeded
			c.finish()
			expired++
			continue
		}
		if deadline.IsZero() || c.deadline.Before(deadline) {
			deadline = c.deadline
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		b.record(0, nil, expired)
		b.abandon()
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()

	pipe := b.client.Pipeline()
	for _, c := range live {
		c.cmd = redis.NewCmd(ctx, c.args[:c.n]...)
		_ = pipe.Process(ctx, c.cmd) // queues: Exec reports the errors
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error

	trips := 1
	var retry []*call
	for _, c := range live {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			retry = append(retry, c)
		}
	}
	if retry != nil {
		trips++
		for _, c := range retry {
			args := make([]any, c.n)
			copy(args, c.args[:c.n])
			args[0], args[1] = "eval", c.lua
			c.cmd = redis.NewCmd(ctx, args...)
			_ = pipe.Process(ctx, c.cmd)
		}
		_, _ = pipe.Exec(ctx)
	}

	var err error
	ok, failed := false, expired
	for _, c := range live {
		if e := c.cmd.Err(); e != nil {
			failed++
			err = e
		} else {
			ok = true
		}
	}
	if ok {
		err = nil
	}
	b.record(trips, err, failed)
	for _, c := range live {
		c.finish()
	}
}
