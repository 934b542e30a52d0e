package redistest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

func TestServerStopRestartPause(t *testing.T) {
	t.Parallel()
	s := redistest.ServerFor(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	require.NoError(t, s.Stop())
	assert.Error(t, c.Ping(ctx).Err(), "a stopped server does not answer")
	require.NoError(t, s.Restart())
	assert.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 10*time.Millisecond)
	assert.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "a restarted server starts empty")

	require.NoError(t, s.Pause())
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	assert.Error(t, c.Ping(short).Err(), "a paused server does not answer")
	require.NoError(t, s.Resume())
	assert.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 10*time.Millisecond)
}

func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.ClusterFor(t, 3)
	require.Len(t, cl.Addrs, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		require.NoError(t, c.Set(ctx, k, k, time.Minute).Err())
		assert.Equal(t, k, c.Get(ctx, k).Val())
	}
	var masters atomic.Int32
	require.NoError(t, c.ForEachMaster(ctx, func(context.Context, *redis.Client) error {
		masters.Add(1)
		return nil
	}))
	assert.Equal(t, int32(3), masters.Load())
}

func TestMissingBinaryFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := redistest.StartServer()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redis-server not found on PATH")
	_, err = redistest.StartCluster(3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not found on PATH")
}
