package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

func warningIDs(ws []checks.Message) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.ID)
	}
	return out
}

// TestCheckStoreMemoryPolicy sets each kind of maxmemory-policy on a server
// of the test's own and checks the warning it raises, if any.
func TestCheckStoreMemoryPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client := newClient(t, srv.Addr)
	s := newStore(t, redisstore.Config{Client: client})
	for _, tc := range []struct {
		maxmemory, policy string
		want              []string
	}{
		{maxmemory: "0", policy: "allkeys-lru"}, // no limit: nothing is evicted
		{maxmemory: "0", policy: "noeviction"},
		{maxmemory: "100mb", policy: "allkeys-lru", want: []string{"ratescope.W604"}},
		{maxmemory: "100mb", policy: "allkeys-random", want: []string{"ratescope.W604"}},
		{maxmemory: "100mb", policy: "volatile-ttl", want: []string{"ratescope.W604"}},
		{maxmemory: "100mb", policy: "noeviction", want: []string{"ratescope.W605"}},
	} {
		require.NoError(t, client.ConfigSet(ctx, "maxmemory", tc.maxmemory).Err())
		require.NoError(t, client.ConfigSet(ctx, "maxmemory-policy", tc.policy).Err())
		ws := s.CheckStore(ctx)
		assert.Equal(t, tc.want, warningIDs(ws), "maxmemory %s, %s", tc.maxmemory, tc.policy)
		for _, w := range ws {
			assert.Contains(t, w.Text, tc.policy)
			assert.Contains(t, w.Text, srv.Addr, "names the server")
			assert.NotEmpty(t, w.Hint)
			assert.Equal(t, checks.Warning, w.Level)
		}
	}
}

// TestCheckStoreContextTimeouts checks that a client built without
// ContextTimeoutEnabled is reported (it was a log line of New before).
func TestCheckStoreContextTimeouts(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: server.Addr})
	t.Cleanup(func() { _ = client.Close() })
	ws := newStore(t, redisstore.Config{Client: client}).CheckStore(context.Background())
	require.Equal(t, []string{"ratescope.W606"}, warningIDs(ws))
	assert.Contains(t, ws[0].Hint, "ContextTimeoutEnabled: true")

	assert.Empty(t, newStore(t, redisstore.Config{Client: newClient(t, server.Addr)}).CheckStore(context.Background()),
		"the shared test server has no memory limit")
}

// TestCheckStoreFullCoverage checks on a cluster of the test's own that a
// master requiring full coverage is reported.
func TestCheckStoreFullCoverage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.ClusterFor(t, 3)
	client := newClusterClient(t, cl)
	s := newStore(t, redisstore.Config{Client: client})
	assert.Empty(t, s.CheckStore(ctx), "redistest clusters do not require full coverage")

	node := redis.NewClient(&redis.Options{Addr: cl.Addrs[1]})
	t.Cleanup(func() { _ = node.Close() })
	require.NoError(t, node.ConfigSet(ctx, "cluster-require-full-coverage", "yes").Err())
	ws := s.CheckStore(ctx)
	require.Equal(t, []string{"ratescope.W607"}, warningIDs(ws))
	assert.Contains(t, ws[0].Text, cl.Addrs[1])
	assert.NotContains(t, ws[0].Text, cl.Addrs[0], "only the master that requires it")
}

// The Redis store takes part in the startup checks (package checks asks a
// store with this method for its problems).
var _ interface {
	CheckStore(context.Context) []checks.Message
} = (*redisstore.Store)(nil)
