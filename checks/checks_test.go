package checks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
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
	msgs := checks.Run(context.Background(), newLimiter(t, core.Config{}).Config())
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
		msgs := checks.Run(context.Background(), newLimiter(t, core.Config{NumProxies: new(n)}).Config())
		assert.NotContains(t, ids(msgs), "ratescope.W601", "NumProxies %d", n)
	}
}

func TestMemoryStoreIsNotShared(t *testing.T) {
	t.Parallel()
	msgs := checks.Run(context.Background(), newLimiter(t, core.Config{NumProxies: new(0)}).Config())
	assert.Equal(t, []string{"ratescope.W602"}, ids(msgs))
	assert.Contains(t, msgs[0].Text, "*memstore.Store")
}

// pingStore is a shared store whose Ping fails or not.
type pingStore struct {
	err error
}

func (pingStore) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	return storecall.Func(func(context.Context, storecall.Call) (core.Result, error) {
		return core.Result{Allowed: true}, nil
	}).Bind(scope, kind, limits)
}

func (pingStore) Shared() bool                 { return true }
func (s pingStore) Ping(context.Context) error { return s.err }

func TestStoreUnreachable(t *testing.T) {
	t.Parallel()
	up := newLimiter(t, core.Config{NumProxies: new(0), Store: pingStore{}})
	assert.Empty(t, checks.Run(context.Background(), up.Config()), "a shared, reachable store raises nothing")

	down := newLimiter(t, core.Config{NumProxies: new(0), Store: pingStore{err: errors.New("dial tcp 127.0.0.1:6379: connection refused")}})
	msgs := checks.Run(context.Background(), down.Config())
	require.Equal(t, []string{"ratescope.W603"}, ids(msgs))
	assert.Contains(t, msgs[0].Text, "connection refused")
	assert.Contains(t, msgs[0].Hint, "fail open")
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	msgs := checks.Run(context.Background(), core.Config{
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
	valid := checks.Run(context.Background(), core.Config{Store: memstore.New(memstore.Config{SweepInterval: -1}), NumProxies: new(0)})
	assert.Equal(t, []string{"ratescope.W602"}, ids(valid), "a valid configuration: no error, and its store is checked")
}

func TestLog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	ctx := context.Background()
	msgs := checks.Run(ctx, newLimiter(t, core.Config{}).Config())
	require.Len(t, msgs, 2)
	checks.Log(ctx, logger, msgs)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, "one line per message")
	assert.Contains(t, lines[0], "level=WARN")
	assert.Contains(t, lines[0], `msg="ratescope: the number of proxies is not set."`, "a short message")
	assert.Contains(t, lines[0], "id=ratescope.W601")
	assert.Contains(t, lines[0], `hint="Set NumProxies`)
	assert.Contains(t, lines[1], "id=ratescope.W602")
}

// TestLogOneLevel logs a warning and an error as JSON: each record has one
// "level", slog's; an attribute of that name would write it twice
// ("level":"WARN",...,"level":"WARNING").
func TestLogOneLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	checks.Log(context.Background(), slog.New(slog.NewJSONHandler(&buf, nil)), []checks.Message{
		{ID: "ratescope.W601", Level: checks.Warning, Text: "a warning.", Hint: "Fix it."},
		{ID: "ratescope.E001", Level: checks.Error, Text: "an error.", Hint: "Fix it too."},
	})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	for i, want := range []string{"WARN", "ERROR"} {
		assert.Equal(t, 1, strings.Count(lines[i], `"level":`), lines[i])
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &rec))
		assert.Equal(t, want, rec["level"])
		assert.Equal(t, []string{"hint", "id", "level", "msg", "time"}, slices.Sorted(maps.Keys(rec)))
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	msgs := checks.Run(ctx, newLimiter(t, core.Config{}).Config())

	kept, err := checks.Options{}.Filter(msgs)
	require.NoError(t, err, "warnings do not fail by default")
	assert.Equal(t, []string{"ratescope.W601", "ratescope.W602"}, ids(kept))

	kept, err = checks.Options{Silence: []string{"ratescope.W602"}}.Filter(msgs)
	require.NoError(t, err)
	assert.Equal(t, []string{"ratescope.W601"}, ids(kept), "a silenced id is not reported")

	_, err = checks.Options{Strict: true}.Filter(msgs)
	require.Error(t, err, "strict: a warning fails")
	assert.Contains(t, err.Error(), "ratescope.W601")
	assert.Contains(t, err.Error(), "ratescope.W602")

	_, err = checks.Options{Strict: true, Silence: []string{"ratescope.W601", "ratescope.W602"}}.Filter(msgs)
	assert.NoError(t, err, "silenced ids do not fail")

	var buf bytes.Buffer
	kept, err = checks.Options{Silence: []string{"ratescope.W601"}}.Filter(msgs)
	require.NoError(t, err)
	checks.Log(ctx, slog.New(slog.NewTextHandler(&buf, nil)), kept)
	assert.NotContains(t, buf.String(), "W601")
	assert.Contains(t, buf.String(), "W602")

	bad := checks.Run(ctx, core.Config{Rates: map[string]string{"api.anon": "1/x"}})
	_, err = checks.Options{}.Filter(bad)
	assert.ErrorContains(t, err, "ratescope.E001", "errors fail without Strict")
}

func TestConfigErrorIDs(t *testing.T) {
	t.Parallel()
	cfg := core.Config{
		IPv6Bits: 200, Scopes: []core.Scope{{Name: "Nope", Shadow: true}}, NumProxies: new(0),
		ExemptNetworks: core.Networks{netip.Prefix{}},
	}
	msgs := checks.Run(context.Background(), cfg)
	assert.Equal(t, []string{"ratescope.E002", "ratescope.E003", "ratescope.E004", "ratescope.E005", "ratescope.W610"}, ids(msgs))
	for _, m := range msgs[:4] {
		assert.Equal(t, checks.Error, m.Level)
		assert.NotEmpty(t, m.Hint, m.ID)
		assert.NotContains(t, m.Text, "ratescope.E", "the id is not repeated in the text")
	}
	_, err := core.New(cfg)
	require.Error(t, err)
	for _, id := range []string{"ratescope.E002", "ratescope.E003", "ratescope.E004", "ratescope.E005"} {
		assert.Contains(t, err.Error(), id, "core.New names the id too")
	}
}

func TestShadowAndTrustedProxies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trusted := core.Networks{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tt := range []struct {
		name string
		cfg  core.Config
		want []string
		text string
	}{
		{name: "trusted proxies alone are a proxy setting", cfg: core.Config{TrustedProxies: trusted}, want: nil},
		{name: "trusted proxies with NumProxies 0", cfg: core.Config{TrustedProxies: trusted, NumProxies: new(0)}, want: []string{"ratescope.W611"}, text: "10.0.0.0/8"},
		{name: "trusted proxies with NumProxies 1", cfg: core.Config{TrustedProxies: trusted, NumProxies: new(1)}, want: nil},
		{name: "exempt network holding the proxies", cfg: core.Config{TrustedProxies: trusted, ExemptNetworks: core.Networks{netip.MustParsePrefix("10.1.0.0/16")}}, want: []string{"ratescope.W613"}, text: "10.1.0.0/16 and 10.0.0.0/8"},
		{name: "exempt network inside the proxies' network", cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("10.0.0.0/24")}, ExemptNetworks: core.Networks{netip.MustParsePrefix("10.0.0.0/8")}}, want: []string{"ratescope.W613"}, text: "10.0.0.0/8 and 10.0.0.0/24"},
		{name: "exempt network apart from the proxies", cfg: core.Config{TrustedProxies: trusted, ExemptNetworks: core.Networks{netip.MustParsePrefix("198.51.100.0/24")}}, want: nil},
		{name: "shadow", cfg: core.Config{NumProxies: new(0), Scopes: shadow("api")}, want: []string{"ratescope.W610"}, text: "scope api is"},
		{name: "shadow scopes", cfg: core.Config{NumProxies: new(0), Scopes: shadow("api", "export")}, want: []string{"ratescope.W610"}, text: "scopes api, export are"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.Store = pingStore{}
			msgs := checks.Run(ctx, newLimiter(t, cfg).Config())
			assert.Equal(t, tt.want, ids(msgs))
			if tt.text != "" {
				require.NotEmpty(t, msgs)
				assert.Contains(t, msgs[0].Text, tt.text)
			}
		})
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Store: pingStore{}, NumProxies: new(1)})
	// A framework that trusts every proxy: the leftmost entry.
	leftmost := func(r *http.Request) string {
		if f := r.Header.Get("X-Forwarded-For"); f != "" {
			first, _, _ := strings.Cut(f, ",")
			return strings.TrimSpace(first)
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		return host
	}
	msgs := checks.ClientIP(lim, "Gin", leftmost)
	require.Equal(t, []string{"ratescope.W612"}, ids(msgs))
	assert.Contains(t, msgs[0].Text, "from 10.0.0.1:40000 with X-Forwarded-For \"198.51.100.20, 192.0.2.30\", Gin says 198.51.100.20 and ratescope counts 192.0.2.30")
	assert.Contains(t, msgs[0].Hint, "SetTrustedProxies")

	// One that agrees: the last entry, as NumProxies 1 says.
	last := func(r *http.Request) string {
		return lim.Caller(r, core.Caller{}).Network().Addr().String()
	}
	assert.Empty(t, checks.ClientIP(lim, "Gin", last))
}

// TestStartupWithRedisDown starts as the documented start-up does, with
// the Redis store and a client built as the docs say (go-redis's default
// retries, ContextTimeoutEnabled): store.Ping without a deadline, then
// checks.Run. With Redis down, refusing connections or never answering,
// both take under a second together, and report W603.
func TestStartupWithRedisDown(t *testing.T) {
	t.Parallel()
	refused := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		return addr
	}
	silent := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		conns := make(chan net.Conn, 16)
		go func() {
			for {
				c, err := l.Accept() // and never answer
				if err != nil {
					close(conns)
					return
				}
				conns <- c
			}
		}()
		t.Cleanup(func() {
			_ = l.Close()
			for c := range conns {
				_ = c.Close()
			}
		})
		return l.Addr().String()
	}
	for _, tc := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{name: "connection refused", addr: refused},
		{name: "never answers", addr: silent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := redis.NewClient(&redis.Options{Addr: tc.addr(t), ContextTimeoutEnabled: true})
			defer client.Close()
			store, err := redisstore.New(redisstore.Config{Client: client})
			require.NoError(t, err)
			lim := newLimiter(t, core.Config{NumProxies: new(0), Store: store})
			start := time.Now()
			pingErr := store.Ping(context.Background())
			msgs := checks.Run(context.Background(), lim.Config())
			took := time.Since(start)
			t.Logf("start-up with Redis down (%s): %s", tc.name, took)
			assert.Error(t, pingErr)
			assert.Equal(t, []string{"ratescope.W603"}, ids(msgs))
			assert.Less(t, took, time.Second, "to listening")
		})
	}
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
	msgs := checks.Run(context.Background(), newLimiter(t, core.Config{NumProxies: new(0), Store: store}).Config())
	require.Equal(t, []string{"ratescope.W603"}, ids(msgs), "shared, so no W602; unreachable, so W603")
	// The client dials again for longer than the store waits for a PING.
	assert.Contains(t, msgs[0].Text, "redisstore: ping: no answer within 200ms")
}

// shadow returns scopes of the given names, each in shadow mode.
func shadow(names ...string) []core.Scope {
	var out []core.Scope
	for _, n := range names {
		out = append(out, core.Scope{Name: n, Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}, Shadow: true})
	}
	return out
}
