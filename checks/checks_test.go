package checks_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/redisstore"
)

func ids(msgs []checks.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

func newLimiter(t *testing.T, cfg core.Config) *core.Limiter {
	t.Helper()
	if cfg.Store == nil {
		s := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { s.Close() })
		cfg.Store = s
	}
	lim, err := core.New(cfg)
	require.NoError(t, err)
	return lim
}

func TestProxiesUnset(t *testing.T) {
	t.Parallel()
	msgs := checks.Limiter(context.Background(), newLimiter(t, core.Config{}))
	require.Contains(t, ids(msgs), "ratescope.W601")
	w := msgs[0]
	assert.Equal(t, checks.Warning, w.Level)
	assert.Equal(t, "the number of proxies is not set.", w.Text)
	// The hint explains both ways a wrong setting fails, and that 0 is
	// valid.
	assert.Contains(t, w.Hint, "counted as a new caller each time")
	assert.Contains(t, w.Hint, "every caller is counted as the proxy")
	assert.Contains(t, w.Hint, "Set 0")
	assert.NotContains(t, w.String(), "\n")
	assert.True(t, strings.HasPrefix(w.String(), "ratescope.W601 WARNING: the number of proxies is not set. HINT: "))
}

func TestProxiesSet(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 3} {
		msgs := checks.Limiter(context.Background(), newLimiter(t, core.Config{NumProxies: core.Proxies(n)}))
		assert.NotContains(t, ids(msgs), "ratescope.W601", "NumProxies %d", n)
	}
}

func TestMemoryStoreIsNotShared(t *testing.T) {
	t.Parallel()
	msgs := checks.Limiter(context.Background(), newLimiter(t, core.Config{NumProxies: core.Proxies(0)}))
	assert.Equal(t, []string{"ratescope.W602"}, ids(msgs))
	assert.Contains(t, msgs[0].Text, "*memstore.Store")
}

// pingStore is a shared store whose Ping fails or not.
type pingStore struct {
	core.Store
	err error
}

func (pingStore) Shared() bool                 { return true }
func (s pingStore) Ping(context.Context) error { return s.err }

func TestStoreUnreachable(t *testing.T) {
	t.Parallel()
	up := newLimiter(t, core.Config{NumProxies: core.Proxies(0), Store: pingStore{}})
	assert.Empty(t, checks.Limiter(context.Background(), up), "a shared, reachable store raises nothing")

	down := newLimiter(t, core.Config{NumProxies: core.Proxies(0), Store: pingStore{err: errors.New("dial tcp 127.0.0.1:6379: connection refused")}})
	msgs := checks.Limiter(context.Background(), down)
	require.Equal(t, []string{"ratescope.W603"}, ids(msgs))
	assert.Contains(t, msgs[0].Text, "connection refused")
	assert.Contains(t, msgs[0].Hint, "fail open")
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	msgs := checks.Config(core.Config{
		Store: memstore.New(memstore.Config{SweepInterval: -1}),
		Rates: map[string]string{"api.anon": "10/mn", "apii.user": "1/min"},
	})
	require.Equal(t, []string{"ratescope.E001", "ratescope.E001", "ratescope.W601"}, ids(msgs))
	assert.Equal(t, checks.Error, msgs[0].Level)
	all := msgs[0].String() + msgs[1].String()
	assert.Contains(t, all, `"10/mn"`, "names the bad rate")
	assert.Contains(t, all, `"apii.user"`, "names the unknown key")
	for _, m := range msgs {
		assert.NotContains(t, m.String(), "\n")
	}
	assert.Empty(t, checks.Config(core.Config{Store: memstore.New(memstore.Config{SweepInterval: -1}), NumProxies: core.Proxies(0)}))
}

func TestLog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	msgs := checks.Log(context.Background(), logger, newLimiter(t, core.Config{}))
	require.Len(t, msgs, 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, "one line per message")
	assert.Contains(t, lines[0], "level=WARN")
	assert.Contains(t, lines[0], "id=ratescope.W601")
	assert.Contains(t, lines[1], "id=ratescope.W602")
}

func TestRedisUnreachableAtStartup(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: the real Redis store cannot reach it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	defer client.Close()
	store, err := redisstore.New(redisstore.Config{Client: client})
	require.NoError(t, err)
	msgs := checks.Limiter(context.Background(), newLimiter(t, core.Config{NumProxies: core.Proxies(0), Store: store}))
	require.Equal(t, []string{"ratescope.W603"}, ids(msgs), "shared, so no W602; unreachable, so W603")
	assert.Contains(t, msgs[0].Text, "connection refused")
}
