package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAwaitEndsAtTheBound gives await a round trip that never ends (a
// client without ContextTimeoutEnabled holds it for its read timeout): the
// wait must end within the bound of a lagging process, Timeout + 4 × lag
// and at least 4 × Timeout, at most ceiling, not when the round trip does.
func TestAwaitEndsAtTheBound(t *testing.T) {
	t.Parallel()
	const timeout = 20 * time.Millisecond
	sent := time.Now()
	done := make(chan int, 1)
	answer := time.AfterFunc(15*time.Second, func() { done <- 1 }) // long past the bound
	defer answer.Stop()
	_, ok := await(context.Background(), done, sent, timeout, &liveness{})
	took := time.Since(sent)
	t.Logf("with Timeout %s, await gave up after %s", timeout, took)
	assert.False(t, ok, "it gave up without an answer")
	assert.GreaterOrEqual(t, took, timeout)
	assert.Less(t, took, ceiling(timeout)+2*time.Second, "it stopped by ceiling (%s)", ceiling(timeout))
}

// answering notes, every few milliseconds until stop, an answer to a round
// trip sent at sent(), as a node that keeps answering others does.
func answering(l *liveness, sent func() time.Time, stop <-chan struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			l.note(sent())
		}
	}
}

// TestAwaitQueued: while the node answers round trips sent before this one
// (it is busy, and this one waits its turn behind them), await waits on;
// once the node is quiet, it gives up about timeout after the last answer.
func TestAwaitQueued(t *testing.T) {
	t.Parallel()
	const timeout, busy = 20 * time.Millisecond, 300 * time.Millisecond
	var l liveness
	sent := time.Now()
	stop := make(chan struct{})
	go answering(&l, func() time.Time { return sent.Add(-time.Millisecond) }, stop)
	time.AfterFunc(busy, func() { close(stop) })
	done := make(chan int)
	_, ok := await(context.Background(), done, sent, timeout, &l)
	took := time.Since(sent)
	t.Logf("busy for %s, Timeout %s: await gave up after %s", busy, timeout, took)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, took, busy, "it waited its turn while the node answered the round trips before it")
}

// TestAwaitOvertaken: the node answers round trips sent after this one, and
// not this one (its connection went silent): await gives up about timeout
// after the first such answer, however long the node keeps answering.
func TestAwaitOvertaken(t *testing.T) {
	t.Parallel()
	const timeout = 20 * time.Millisecond
	var l liveness
	sent := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go answering(&l, time.Now, stop)
	done := make(chan int)
	_, ok := await(context.Background(), done, sent, timeout, &l)
	took := time.Since(sent)
	t.Logf("overtaken, Timeout %s: await gave up after %s", timeout, took)
	assert.False(t, ok)
	assert.Less(t, took, time.Second, "the answers to later round trips did not hold it: about timeout after the first")
}
