package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAwaitStopsAtCeiling gives await a node whose last answer reads
// an hour ahead, as an answer noted just before the wall clock stepped back
// an hour would (liveness keeps wall-clock time): each wake-up then finds
// the node answering and moves the due time on, and the round trip itself
// never ends (a client without ContextTimeoutEnabled holds it for its read
// timeout). The wait must still end at ceiling, as documented, not at
// the node's last answer plus Timeout. (Before, the timer was reset to that
// time, uncapped, and the wait lasted until the answer came.)
func TestAwaitStopsAtCeiling(t *testing.T) {
	t.Parallel()
	const timeout = 20 * time.Millisecond
	var node liveness
	sent := time.Now()
	node.last.Store(sent.Add(time.Hour).UnixNano())
	done := make(chan int, 1)
	answer := time.AfterFunc(15*time.Second, func() { done <- 1 }) // long past the bound
	defer answer.Stop()
	_, ok := await(context.Background(), done, sent, timeout, &node)
	took := time.Since(sent)
	t.Logf("with Timeout %s, await gave up after %s", timeout, took)
	assert.False(t, ok, "it gave up without an answer")
	assert.GreaterOrEqual(t, took, ceiling(timeout), "the node kept answering: it waited on")
	assert.Less(t, took, ceiling(timeout)+2*time.Second, "it stopped at about ceiling (%s)", ceiling(timeout))
}
