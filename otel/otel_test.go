package otel_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/metricstest"
	rsotel "github.com/ratescope/ratescope/otel"
)

// newRecorder returns a Recorder on an SDK MeterProvider whose
// ManualReader the test collects from.
func newRecorder(t *testing.T, cfg rsotel.Config) (*rsotel.Recorder, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	cfg.MeterProvider = provider
	metrics, err := rsotel.New(cfg)
	require.NoError(t, err)
	return metrics, reader
}

// collect reads every instrument once and returns them by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, "github.com/ratescope/ratescope/otel", sm.Scope.Name, "the module's import path")
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// sum returns the value of the data point of the Int64 sum m whose
// attributes are attrs, and whether there is one.
func sum(m metricdata.Metrics, attrs ...attribute.KeyValue) (int64, bool) {
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		return 0, false
	}
	want := attribute.NewSet(attrs...)
	for _, p := range s.DataPoints {
		if p.Attributes.Equals(&want) {
			return p.Value, true
		}
	}
	return 0, false
}

func attrs(scope, kind, outcome string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("scope", scope), attribute.String("kind", kind), attribute.String("outcome", outcome)}
}

func TestRecord(t *testing.T) {
	t.Parallel()
	metrics, reader := newRecorder(t, rsotel.Config{})
	lims := metricstest.New(t, metrics.Observe)

	got := collect(t, reader)
	assert.NotContains(t, got, "ratescope.store.failures", "nothing watched yet")
	require.NoError(t, metrics.Watch(lims.Limiter))
	require.NoError(t, metrics.Watch(lims.Down))
	require.NoError(t, metrics.Watch(lims.Store))
	assert.EqualError(t, metrics.Watch(42), "ratescope/otel: int has none of StoreFailures, Evictions or Stats")

	lims.Decide(t)

	got = collect(t, reader)
	decisions := got["ratescope.decisions"]
	assert.Equal(t, "{decision}", decisions.Unit)
	assert.True(t, decisions.Data.(metricdata.Sum[int64]).IsMonotonic)
	for _, c := range metricstest.Counts {
		n, ok := sum(decisions, attrs(c.Scope, c.Kind, c.Outcome)...)
		assert.True(t, ok, "%s %s %s", c.Scope, c.Kind, c.Outcome)
		assert.Equal(t, c.N, n, "%s %s %s", c.Scope, c.Kind, c.Outcome)
	}
	assert.Len(t, decisions.Data.(metricdata.Sum[int64]).DataPoints, len(metricstest.Counts), "one series per scope, kind and outcome seen, none per caller")
	costs := got["ratescope.decision.cost"]
	assert.Equal(t, "{unit}", costs.Unit)
	assert.True(t, costs.Data.(metricdata.Sum[int64]).IsMonotonic)
	cost, _ := sum(got["ratescope.decision.cost"], attrs("api", "user", "allowed")...)
	assert.Equal(t, int64(4), cost, "1 + 3 units")
	wsCost, _ := sum(got["ratescope.decision.cost"], attrs("ws", "anon", "allowed")...)
	assert.Equal(t, int64(32*150), wsCost)

	duration := got["ratescope.decision.duration"]
	assert.Equal(t, "s", duration.Unit)
	hist := duration.Data.(metricdata.Histogram[float64])
	assert.Equal(t, rsotel.DefaultBuckets, hist.DataPoints[0].Bounds)
	counts := map[attribute.Distinct]uint64{}
	for _, p := range hist.DataPoints {
		assert.Equal(t, 2, p.Attributes.Len(), "scope and outcome, no kind")
		counts[p.Attributes.Equivalent()] += p.Count
	}
	count := func(scope, outcome string) uint64 {
		set := attribute.NewSet(attribute.String("scope", scope), attribute.String("outcome", outcome))
		return counts[set.Equivalent()]
	}
	assert.Equal(t, uint64(4), count("api", "allowed"))
	assert.Equal(t, uint64(1), count("api", "denied"))
	assert.Equal(t, uint64(1), count("api", "failed_open"))
	assert.Equal(t, uint64(1), count("api", "failed_closed"))
	assert.Zero(t, count("api", "exempt"), "an exempt caller is decided without the store")
	assert.Zero(t, count("api", "reset"), "a reset decides no request")

	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        "ratescope.store.failures",
		Description: "Decisions that failed open, or failed closed in a scope that fails closed, because the store returned an error.",
		Unit:        "{decision}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints:  []metricdata.DataPoint[int64]{{Value: 1}}, // added up over the two limiters
		},
	}, got["ratescope.store.failures"], metricdatatest.IgnoreTimestamp())
	evictions, ok := sum(got["ratescope.store.evictions"])
	assert.True(t, ok)
	assert.Zero(t, evictions)
	assert.NotContains(t, got, "ratescope.redis.calls", "no Redis store watched")
}

func TestRedisStats(t *testing.T) {
	t.Parallel()
	metrics, reader := newRecorder(t, rsotel.Config{Buckets: []float64{0.001, 0.01}})
	rs := metricstest.NewRedis(t, metrics.Observe)
	require.NoError(t, metrics.Watch(rs.Store))

	rs.Decide(t)
	got := collect(t, reader)
	calls, ok := sum(got["ratescope.redis.calls"])
	require.True(t, ok)
	hits, _ := sum(got["ratescope.redis.cache.hits"])
	assert.Equal(t, int64(3), calls+hits, "every decision went to Redis or to the over-limit cache")
	gauge, ok := got["ratescope.redis.breaker.open"].Data.(metricdata.Gauge[int64])
	require.True(t, ok)
	require.Len(t, gauge.DataPoints, 1)
	assert.Zero(t, gauge.DataPoints[0].Value)
	cached, ok := got["ratescope.redis.cached_denials"].Data.(metricdata.Sum[int64])
	require.True(t, ok)
	assert.False(t, cached.IsMonotonic, "an up-down counter: the cache empties")
	for _, name := range []string{"ratescope.redis.round_trips", "ratescope.redis.failures", "ratescope.redis.failed_fast", "ratescope.redis.breaker.opens"} {
		_, ok := sum(got[name])
		assert.True(t, ok, name)
	}
	denied, _ := sum(got["ratescope.decisions"], attrs("api", "anon", "denied")...)
	assert.Equal(t, int64(2), denied)
	assert.Equal(t, []float64{0.001, 0.01}, got["ratescope.decision.duration"].Data.(metricdata.Histogram[float64]).DataPoints[0].Bounds)
	assert.NotContains(t, got, "ratescope.store.failures", "the limiter is not watched")
}

// The instruments come from the global MeterProvider when Config names
// none, as OpenTelemetry's instrumentation libraries do; one set after New
// still receives the measurements. The decisions are counted by the
// Recorder and read at collection, so one made before the provider was
// set is counted too; its duration, recorded through the SDK then, is
// not.
func TestGlobalMeterProvider(t *testing.T) {
	metrics, err := rsotel.New(rsotel.Config{})
	require.NoError(t, err)
	metrics.Observe(context.Background(), core.Event{Scope: "api", Outcome: core.OutcomeAllowed, Cost: 1})
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	previous := otel.GetMeterProvider()
	otel.SetMeterProvider(provider)
	t.Cleanup(func() {
		otel.SetMeterProvider(previous)
		_ = provider.Shutdown(context.Background())
	})
	metrics.Observe(context.Background(), core.Event{Scope: "api", Outcome: core.OutcomeDenied, Cost: 1})
	got := collect(t, reader)
	n, ok := sum(got["ratescope.decisions"], attrs("api", "anon", "denied")...)
	assert.True(t, ok)
	assert.Equal(t, int64(1), n)
	before, ok := sum(got["ratescope.decisions"], attrs("api", "anon", "allowed")...)
	assert.True(t, ok, "the decision made before the provider was set")
	assert.Equal(t, int64(1), before)
	hist := got["ratescope.decision.duration"].Data.(metricdata.Histogram[float64])
	require.Len(t, hist.DataPoints, 1, "the duration recorded after the provider was set alone")
	outcome, _ := hist.DataPoints[0].Attributes.Value("outcome")
	assert.Equal(t, "denied", outcome.AsString())
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		buckets []float64
		want    string
	}{
		{name: "default", buckets: nil},
		{name: "increasing", buckets: []float64{0, 0.5, 1}},
		{name: "equal", buckets: []float64{1, 1}, want: "ratescope/otel: Config.Buckets[1] is 1, not above Buckets[0] (1): the boundaries must increase"},
		{name: "decreasing and NaN", buckets: []float64{2, 1, math.NaN()}, want: "ratescope/otel: Config.Buckets[1] is 1, not above Buckets[0] (2): the boundaries must increase\n" +
			"ratescope/otel: Config.Buckets[2] is NaN, not a finite number of seconds"},
		{name: "infinite", buckets: []float64{math.Inf(1)}, want: "ratescope/otel: Config.Buckets[0] is +Inf, not a finite number of seconds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := rsotel.Config{Buckets: tt.buckets}
			err := cfg.Validate()
			_, newErr := rsotel.New(cfg)
			if tt.want == "" {
				assert.NoError(t, err)
				assert.NoError(t, newErr)
				return
			}
			assert.EqualError(t, err, tt.want)
			assert.EqualError(t, newErr, tt.want, "New fails as Validate does")
		})
	}
}

// Observe allocates nothing once a series has been seen: its attribute
// options are made once.
func TestObserveAllocs(t *testing.T) {
	metrics, _ := newRecorder(t, rsotel.Config{})
	e := core.Event{Scope: "api", Outcome: core.OutcomeAllowed, Cost: 1, Duration: time.Millisecond}
	ctx := context.Background()
	metrics.Observe(ctx, e)
	allocs := testing.AllocsPerRun(100, func() { metrics.Observe(ctx, e) })
	assert.Zero(t, allocs)
}

func BenchmarkObserve(b *testing.B) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	b.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	metrics, err := rsotel.New(rsotel.Config{MeterProvider: provider})
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
