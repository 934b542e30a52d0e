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
	_, ok := await(context.Background(), done, sent, timeout)
	took := time.Since(sent)
	t.Logf("with Timeout %s, await gave up after %s", timeout, took)
	assert.False(t, ok, "it gave up without an answer")
	assert.GreaterOrEqual(t, took, timeout)
	assert.Less(t, took, ceiling(timeout)+2*time.Second, "it stopped by ceiling (%s)", ceiling(timeout))
}
