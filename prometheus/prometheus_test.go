package prometheus_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/redistest"
	rsprom "github.com/ratescope/ratescope/prometheus"
)

// scrape serves reg through promhttp on a real HTTP server, GETs it once and
// parses the text format.
func scrape(t *testing.T, reg *prom.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// value returns the value of the sample of family name whose labels are
// want, and whether there is one.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

type downStore struct{}

func (downStore) Take(context.Context, core.Request) (core.Result, error) {
	return core.Result{}, errors.New("down")
}

func TestScrape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	metrics := rsprom.New(rsprom.Config{})
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	clock := storetest.NewClock(storetest.Start)
	// rippled's figures with low thresholds (a policy with any figure set
	// is taken as written, so start from the default one).
	policy := core.DefaultBalancePolicy()
	policy.Warn, policy.Drop = 100, 150
	lim, err := core.New(core.Config{
		Store: store,
		Scopes: []core.Scope{
			{Name: "api", Anon: []core.Rate{core.PerMinute(2)}, User: []core.Rate{core.PerMinute(5)}},
			{Name: "new", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}, Shadow: true},
		},
		Balances:   []core.BalanceScope{{Name: "ws", BalancePolicy: policy}},
		NumProxies: core.Proxies(0),
		Now:        clock.Now,
		Logger:     slog.New(slog.DiscardHandler),
		Observe:    metrics.Observe,
	})
	require.NoError(t, err)
	down, err := core.New(core.Config{Store: downStore{}, NumProxies: core.Proxies(0), Logger: slog.New(slog.DiscardHandler), Observe: metrics.Observe})
	require.NoError(t, err)
	closed, err := core.New(core.Config{Store: downStore{}, NumProxies: core.Proxies(0), FailClosedScopes: []string{"api"}, Logger: slog.New(slog.DiscardHandler), Observe: metrics.Observe})
	require.NoError(t, err)
	require.NoError(t, metrics.Watch(lim))
	require.NoError(t, metrics.Watch(down))
	require.NoError(t, metrics.Watch(store))
	assert.Error(t, metrics.Watch(42), "an int has no counters")

	reg := prom.NewRegistry()
	require.NoError(t, reg.Register(metrics))

	api, err := lim.Guard("api", 1)
	require.NoError(t, err)
	shadow, err := lim.Guard("new", 1)
	require.NoError(t, err)
	anon := core.Caller{}
	h := http.Header{}
	var d core.Decision
	for range 3 {
		decideInto(api, ctx, &d, anon, h, false) // 2 allowed, 1 denied
	}
	decideInto(api, ctx, &d, core.UserCaller("alice"), h, false)
	decideInto(api, ctx, &d, core.UserCaller("admin"), nil, true)
	for range 3 {
		decideInto(shadow, ctx, &d, anon, h, false) // 1 allowed, 2 shadow
	}
	_, err = down.Allow(ctx, "api", anon) // failed open
	require.NoError(t, err)
	_, err = closed.Allow(ctx, "api", anon) // failed closed
	require.NoError(t, err)
	_, err = lim.AllowN(ctx, "api", core.UserCaller("bob"), 3)
	require.NoError(t, err)

	ws, err := lim.BalanceGuard("ws")
	require.NoError(t, err)
	ws.Charge(ctx, anon, 32*150) // at the drop threshold: allowed
	ws.Charge(ctx, anon, 20)     // dropped
	require.NoError(t, lim.Reset(ctx, "api", anon))
	require.NoError(t, lim.Reset(ctx, "ws", anon))

	families := scrape(t, reg)
	for _, tt := range []struct {
		scope, kind, outcome string
		want                 float64
	}{
		{"api", "anon", "allowed", 2},
		{"api", "anon", "denied", 1},
		{"api", "user", "allowed", 2},
		{"api", "user", "exempt", 1},
		{"new", "anon", "allowed", 1},
		{"new", "anon", "shadow", 2},
		{"api", "anon", "failed_open", 1},
		{"api", "anon", "failed_closed", 1},
		{"ws", "anon", "allowed", 1},
		{"ws", "anon", "denied", 1},
		{"api", "anon", "reset", 1},
		{"ws", "anon", "reset", 1},
	} {
		got, ok := value(families, "ratescope_decisions_total", map[string]string{"scope": tt.scope, "kind": tt.kind, "outcome": tt.outcome})
		assert.True(t, ok, "%s %s %s", tt.scope, tt.kind, tt.outcome)
		assert.Equal(t, tt.want, got, "%s %s %s", tt.scope, tt.kind, tt.outcome)
	}
	cost, _ := value(families, "ratescope_decision_cost_total", map[string]string{"scope": "api", "kind": "user", "outcome": "allowed"})
	assert.Equal(t, 4.0, cost, "1 + 3 units")
	n, ok := value(families, "ratescope_decision_duration_seconds", map[string]string{"scope": "api"})
	require.True(t, ok)
	assert.Equal(t, 7.0, n, "every decision that asked the store, the exempt one and the reset aside")
	assert.Equal(t, dto.MetricType_HISTOGRAM, families["ratescope_decision_duration_seconds"].GetType())
	assert.Equal(t, dto.MetricType_COUNTER, families["ratescope_decisions_total"].GetType())
	failures, _ := value(families, "ratescope_store_failures_total", nil)
	assert.Equal(t, 1.0, failures, "added up over the two limiters")
	evictions, ok := value(families, "ratescope_store_evictions_total", nil)
	assert.True(t, ok)
	assert.Zero(t, evictions)
	// MaxEntries bounds the whole store since issue 10; the help text said
	// a shard was full until issue 18.
	assert.Contains(t, families["ratescope_store_evictions_total"].GetHelp(), "the whole store was full")
	_, ok = value(families, "ratescope_redis_calls_total", nil)
	assert.False(t, ok, "no Redis store watched")

	// The registry checks the metrics are consistent with their
	// descriptions.
	_, err = reg.Gather()
	require.NoError(t, err)
}

func TestRedisStats(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	store, err := redisstore.New(redisstore.Config{Client: client, Prefix: "prom-test:" + t.Name() + ":"})
	require.NoError(t, err)
	metrics := rsprom.New(rsprom.Config{Namespace: "rs", ConstLabels: prom.Labels{"service": "test"}})
	lim, err := core.New(core.Config{Store: store, NumProxies: core.Proxies(0), Observe: metrics.Observe, Rates: map[string]string{"api.anon": "1/min"}})
	require.NoError(t, err)
	require.NoError(t, metrics.Watch(store))
	reg := prom.NewRegistry()
	require.NoError(t, reg.Register(metrics))

	ctx := context.Background()
	for range 3 {
		_, err := lim.Allow(ctx, "api", core.Caller{})
		require.NoError(t, err)
	}
	families := scrape(t, reg)
	calls, ok := value(families, "rs_redis_calls_total", map[string]string{"service": "test"})
	require.True(t, ok)
	hits, _ := value(families, "rs_redis_cache_hits_total", nil)
	assert.Equal(t, 3.0, calls+hits, "every decision went to Redis or to the over-limit cache")
	open, ok := value(families, "rs_redis_breaker_open", nil)
	require.True(t, ok)
	assert.Zero(t, open)
	denied, _ := value(families, "rs_decisions_total", map[string]string{"outcome": "denied"})
	assert.Equal(t, 2.0, denied)
}

func BenchmarkObserve(b *testing.B) {
	metrics := rsprom.New(rsprom.Config{})
	d := &core.Decision{Scope: "api", Outcome: core.OutcomeAllowed, Cost: 1}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			metrics.Observe(ctx, core.Event{Decision: d, Duration: time.Millisecond})
		}
	})
}

// decideInto decides a request by caller with g, as a middleware does, and
// copies the decision into d.
func decideInto(g *core.Guard, ctx context.Context, d *core.Decision, caller core.Caller, h http.Header, exempt bool) {
	var t core.Ticket
	g.Check(ctx, &t, core.Call{Caller: caller, Header: h, Exempt: exempt})
	*d = *t.Decision()
}
