package otel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/watch"
)

// meterName is the name of the Meter (the instrumentation scope) the
// instruments are created in: the module's import path.
const meterName = "github.com/ratescope/ratescope/otel"

// The attribute keys, the prometheus module's label names.
const (
	scopeKey   = attribute.Key("scope")
	kindKey    = attribute.Key("kind")
	outcomeKey = attribute.Key("outcome")
)

// Config configures a [Recorder]. Zero fields take the defaults stated on
// each.
type Config struct {
	// MeterProvider provides the Meter the instruments are created in,
	// named github.com/ratescope/ratescope/otel. Default: the global
	// MeterProvider (go.opentelemetry.io/otel.GetMeterProvider), which
	// records nothing until the application sets one with
	// otel.SetMeterProvider.
	MeterProvider metric.MeterProvider

	// Buckets are the explicit bucket boundaries, in seconds, advised for
	// the histogram ratescope.decision.duration; a View of the SDK may
	// override them. They must be finite and increasing. Default:
	// DefaultBuckets, 50µs to about 1.6s.
	Buckets []float64
}

// DefaultBuckets are the default bucket boundaries of
// ratescope.decision.duration, in seconds, as in the Prometheus module:
// from 50µs, where every decision in memory falls, doubling to about 1.6s,
// past the Redis store's timeouts.
var DefaultBuckets = []float64{
	50e-6, 100e-6, 200e-6, 400e-6, 800e-6, 1.6e-3, 3.2e-3, 6.4e-3,
	12.8e-3, 25.6e-3, 51.2e-3, 102.4e-3, 204.8e-3, 409.6e-3, 819.2e-3, 1.6384,
}

// Validate reports every problem of c, joined, each naming its field.
func (c Config) Validate() error {
	var errs []error
	for i, b := range c.Buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			errs = append(errs, fmt.Errorf("ratescope/otel: Config.Buckets[%d] is %v, not a finite number of seconds", i, b))
		} else if i > 0 && !(b > c.Buckets[i-1]) {
			errs = append(errs, fmt.Errorf("ratescope/otel: Config.Buckets[%d] is %v, not above Buckets[%d] (%v): the boundaries must increase", i, b, i-1, c.Buckets[i-1]))
		}
	}
	return errors.Join(errs...)
}

// A Recorder records the decisions it observes, and the counters of the
// values it watches, through the OpenTelemetry metric API. Build it with
// [New] and give its Observe method to core.Config.Observe; the
// MeterProvider's readers or exporters take the measurements from there.
// It is safe for concurrent use.
//
// A Recorder counts the decisions and their cost itself, in a counter per
// series, and the SDK reads them at each collection (observable counters),
// so that a decision observed before the application sets its
// MeterProvider is counted all the same; only the duration goes through
// the SDK on each decision, the one measurement whose value differs from
// decision to decision.
type Recorder struct {
	decisions metric.Int64ObservableCounter
	cost      metric.Int64ObservableCounter
	duration  metric.Float64Histogram

	// series holds the counts and the attribute options of each (scope,
	// kind, outcome), so that Observe builds no attribute set after the
	// first decision of a series.
	series sync.Map // seriesKey -> *series

	watched watch.Set

	failures, evictions                            metric.Int64ObservableCounter
	calls, trips, redisFailures, failedFast, opens metric.Int64ObservableCounter
	cacheHits                                      metric.Int64ObservableCounter
	breakerOpen                                    metric.Int64ObservableGauge
	cached                                         metric.Int64ObservableUpDownCounter
}

type seriesKey struct {
	scope   string
	kind    core.Kind
	outcome core.Outcome
}

// series holds the counts of one attribute set, and its options, made
// once: passed on as a slice, they cost no allocation per measurement.
type series struct {
	decisions, cost atomic.Int64
	observe         []metric.ObserveOption // scope, kind, outcome
	record          []metric.RecordOption  // scope, outcome
}

// New returns a Recorder for cfg, its instruments created in a Meter of
// cfg.MeterProvider. It returns an error if cfg is not valid or the
// MeterProvider refuses an instrument.
func New(cfg Config) (*Recorder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	buckets := cfg.Buckets
	if buckets == nil {
		buckets = DefaultBuckets
	}
	m := mp.Meter(meterName)
	r := &Recorder{}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return c
	}
	r.decisions = counter("ratescope.decisions", "{decision}", "Rate limit decisions, by scope, kind of caller (anon, user) and outcome ("+outcomeNames()+"; reset for a caller's counts cleared).")
	r.cost = counter("ratescope.decision.cost", "{unit}", "Units of cost of the decided requests, by scope, kind of caller and outcome.")
	var err error
	r.duration, err = m.Float64Histogram("ratescope.decision.duration", metric.WithUnit("s"),
		metric.WithDescription("Time taken by rate limit decisions that asked the store, store call included, by scope and outcome."),
		metric.WithExplicitBucketBoundaries(buckets...))
	check(err)
	r.failures = counter("ratescope.store.failures", "{decision}", "Decisions that failed open, or failed closed in a scope that fails closed, because the store returned an error.")
	r.evictions = counter("ratescope.store.evictions", "{entry}", "Live entries the memory store evicted because the whole store was full (memstore.Config.MaxEntries).")
	r.calls = counter("ratescope.redis.calls", "{call}", "Decisions sent to Redis.")
	r.trips = counter("ratescope.redis.round_trips", "{round_trip}", "Pipelines or lone commands that carried the Redis calls.")
	r.redisFailures = counter("ratescope.redis.failures", "{call}", "Redis calls that failed.")
	r.failedFast = counter("ratescope.redis.failed_fast", "{decision}", "Decisions that failed at once, without calling Redis, while a circuit breaker was open: allowed uncounted, or refused in a scope that fails closed.")
	r.opens = counter("ratescope.redis.breaker.opens", "{open}", "Times the circuit breaker opened.")
	r.cacheHits = counter("ratescope.redis.cache.hits", "{denial}", "Denials answered by the over-limit cache without calling Redis.")
	r.breakerOpen, err = m.Int64ObservableGauge("ratescope.redis.breaker.open", metric.WithUnit("{breaker}"),
		metric.WithDescription("1 while the circuit breaker is open, 0 otherwise."))
	check(err)
	r.cached, err = m.Int64ObservableUpDownCounter("ratescope.redis.cached_denials", metric.WithUnit("{denial}"),
		metric.WithDescription("Denials the over-limit cache holds now."))
	check(err)
	if len(errs) == 0 {
		_, err = m.RegisterCallback(r.collect, r.decisions, r.cost, r.failures, r.evictions, r.calls, r.trips, r.redisFailures,
			r.failedFast, r.opens, r.cacheHits, r.breakerOpen, r.cached)
		check(err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("ratescope/otel: %w", errors.Join(errs...))
	}
	return r, nil
}

// outcomeNames lists the values of the outcome attribute, core.Outcomes' but reset,
// for the descriptions.
func outcomeNames() string {
	var names []string
	for _, o := range core.Outcomes() {
		if o != core.OutcomeReset {
			names = append(names, o.String())
		}
	}
	return strings.Join(names, ", ")
}

// Observe records the decision of e: give it to core.Config.Observe. It
// counts the decision and its cost in its series, and records the
// duration with ctx, so that an SDK that keeps exemplars links the
// duration to the request's trace.
func (r *Recorder) Observe(ctx context.Context, e core.Event) {
	key := seriesKey{scope: e.Scope, kind: e.Caller.Kind(), outcome: e.Outcome}
	v, ok := r.series.Load(key)
	if !ok {
		scope, outcome := scopeKey.String(key.scope), outcomeKey.String(key.outcome.String())
		all := metric.WithAttributeSet(attribute.NewSet(scope, kindKey.String(key.kind.String()), outcome))
		byScope := metric.WithAttributeSet(attribute.NewSet(scope, outcome))
		v, _ = r.series.LoadOrStore(key, &series{
			observe: []metric.ObserveOption{all},
			record:  []metric.RecordOption{byScope},
		})
	}
	s := v.(*series)
	s.decisions.Add(1)
	s.cost.Add(e.Cost)
	if key.outcome != core.OutcomeExempt && key.outcome != core.OutcomeReset {
		r.duration.Record(ctx, e.Duration.Seconds(), s.record...)
	}
}

// Watch adds v to the values whose counters are read at each collection.
// v has one or more of these methods:
//
//	StoreFailures() int64    *core.Limiter       ratescope.store.failures
//	Evictions() int64        *memstore.Store     ratescope.store.evictions
//	Stats() counters.Redis   *redisstore.Store   ratescope.redis.*
//
// It returns an error if v has none of them.
func (r *Recorder) Watch(v any) error {
	if err := r.watched.Add(v); err != nil {
		return fmt.Errorf("ratescope/otel: %w", err)
	}
	return nil
}

// collect observes the counts of every series seen, and the counters of
// the watched values, added up by kind: an instrument of the watched
// values is observed only when a value of its kind is watched.
func (r *Recorder) collect(_ context.Context, o metric.Observer) error {
	r.series.Range(func(_, v any) bool {
		s := v.(*series)
		o.ObserveInt64(r.decisions, s.decisions.Load(), s.observe...)
		o.ObserveInt64(r.cost, s.cost.Load(), s.observe...)
		return true
	})
	t := r.watched.Totals()
	if t.HasStoreFailures {
		o.ObserveInt64(r.failures, t.StoreFailures)
	}
	if t.HasEvictions {
		o.ObserveInt64(r.evictions, t.Evictions)
	}
	if t.HasRedis {
		st := t.Redis
		var open int64
		if st.BreakerOpen {
			open = 1
		}
		o.ObserveInt64(r.calls, st.Calls)
		o.ObserveInt64(r.trips, st.RoundTrips)
		o.ObserveInt64(r.redisFailures, st.Failures)
		o.ObserveInt64(r.failedFast, st.FailedFast)
		o.ObserveInt64(r.opens, st.BreakerOpens)
		o.ObserveInt64(r.cacheHits, st.CacheHits)
		o.ObserveInt64(r.breakerOpen, open)
		o.ObserveInt64(r.cached, int64(st.Cached))
	}
	return nil
}
