//go:build !race

package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/redistest"
)

// TestQuietProcessGivesUp pauses Redis under a process that is not slowed:
// no race detector, and nothing else running in it (make quiet runs it
// apart, as make allocs runs the allocation tests). A decision alone, then
// 64 at once, give up at about Timeout (50ms), well before the ceiling of
// 40 × Timeout (2s) that a slowed process may wait (ADR 0041).
func TestQuietProcessGivesUp(t *testing.T) {
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	s := loadStore(t, redisstore.Config{Client: client, BreakerFailures: 1000})
	warmUp(t, s)
	req := core.Request{Scope: "quiet", Caller: core.Caller{User: "quinn"}, Limits: []core.Rate{core.PerMinute(1000)}, Cost: 1, Now: storetest.Start}

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	start := time.Now()
	_, err := s.Take(context.Background(), req)
	took := time.Since(start)
	o := all(s, func(int) core.Request { return req }, 64)
	t.Logf("Redis paused, Timeout 50ms: one decision alone gave up after %s; 64 at once: %s", took, o)
	require.Error(t, err)
	assert.True(t, isTimeout(err), "a timeout: %v", err)
	assert.Less(t, took, time.Second, "about Timeout")
	assert.Equal(t, int64(64), o.failed.Load())
	assert.Less(t, time.Duration(o.slowest.Load()), time.Second, "about Timeout")
}
