package prometheus_test

import (
	"context"
	"math"
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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/metricstest"
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

func TestScrape(t *testing.T) {
	t.Parallel()
	metrics, err := rsprom.New(rsprom.Config{})
	require.NoError(t, err)
	lims := metricstest.New(t, metrics.Observe)
	require.NoError(t, metrics.Watch(lims.Limiter))
	require.NoError(t, metrics.Watch(lims.Down))
	require.NoError(t, metrics.Watch(lims.Store))
	assert.Error(t, metrics.Watch(42), "an int has no counters")

	reg := prom.NewRegistry()
	require.NoError(t, reg.Register(metrics))

	lims.Decide(t)

	families := scrape(t, reg)
	for _, c := range metricstest.Counts {
		got, ok := value(families, "ratescope_decisions_total", map[string]string{"scope": c.Scope, "kind": c.Kind, "outcome": c.Outcome})
		assert.True(t, ok, "%s %s %s", c.Scope, c.Kind, c.Outcome)
		assert.Equal(t, float64(c.N), got, "%s %s %s", c.Scope, c.Kind, c.Outcome)
	}
	assert.Len(t, families["ratescope_decisions_total"].GetMetric(), len(metricstest.Counts), "one series per scope, kind and outcome seen, none per caller")
	cost, _ := value(families, "ratescope_decision_cost_total", map[string]string{"scope": "api", "kind": "user", "outcome": "allowed"})
	assert.Equal(t, 4.0, cost, "1 + 3 units")
	wsCost, _ := value(families, "ratescope_decision_cost_total", map[string]string{"scope": "ws", "kind": "anon", "outcome": "allowed"})
	assert.Equal(t, float64(32*150), wsCost)
	// Every decision that asked the store, by outcome: the exempt one and
	// the reset aside.
	for outcome, want := range map[string]float64{"allowed": 4, "denied": 1, "failed_open": 1, "failed_closed": 1} {
		n, ok := value(families, "ratescope_decision_duration_seconds", map[string]string{"scope": "api", "outcome": outcome})
		assert.True(t, ok, outcome)
		assert.Equal(t, want, n, outcome)
	}
	for _, outcome := range []string{"exempt", "reset"} {
		_, ok := value(families, "ratescope_decision_duration_seconds", map[string]string{"scope": "api", "outcome": outcome})
		assert.False(t, ok, outcome)
	}
	for _, m := range families["ratescope_decision_duration_seconds"].GetMetric() {
		assert.Len(t, m.GetLabel(), 2, "scope and outcome, no kind")
	}
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
	metrics, err := rsprom.New(rsprom.Config{Namespace: "rs", ConstLabels: prom.Labels{"service": "test"}})
	require.NoError(t, err)
	rs := metricstest.NewRedis(t, metrics.Observe)
	require.NoError(t, metrics.Watch(rs.Store))
	reg := prom.NewRegistry()
	require.NoError(t, reg.Register(metrics))

	rs.Decide(t)
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
	metrics, err := rsprom.New(rsprom.Config{})
	require.NoError(b, err)
	d := &core.Decision{Scope: "api", Outcome: core.OutcomeAllowed, Cost: 1}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			metrics.Observe(ctx, core.Event{Scope: d.Scope, Outcome: d.Outcome, Cost: d.Cost, Decision: d, Duration: time.Millisecond})
		}
	})
}

// A setting the Prometheus client would panic on, at registration or at
// the first decision, fails New instead, naming the field.
func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  rsprom.Config
		want string
	}{
		{name: "decreasing buckets", cfg: rsprom.Config{Buckets: []float64{2, 1}}, want: "Config.Buckets[1] is 1, not above Buckets[0] (2)"},
		{name: "infinite bucket", cfg: rsprom.Config{Buckets: []float64{math.Inf(1)}}, want: "Config.Buckets[0] is +Inf"},
		{name: "namespace", cfg: rsprom.Config{Namespace: "my-app"}, want: `Config.Namespace "my-app"`},
		{name: "label name", cfg: rsprom.Config{ConstLabels: prom.Labels{"1st": "x"}}, want: `Config.ConstLabels "1st"`},
		{name: "reserved label", cfg: rsprom.Config{ConstLabels: prom.Labels{"__name": "x"}}, want: `Config.ConstLabels "__name"`},
		{name: "own label", cfg: rsprom.Config{ConstLabels: prom.Labels{"scope": "x"}}, want: `Config.ConstLabels "scope": the collector's own label`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := rsprom.New(tc.cfg)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, err, tc.cfg.Validate())
		})
	}
	m, err := rsprom.New(rsprom.Config{Namespace: "my_app", Buckets: []float64{0.001, 0.01}, ConstLabels: prom.Labels{"service": "x"}})
	require.NoError(t, err)
	require.NoError(t, prom.NewRegistry().Register(m))
}
