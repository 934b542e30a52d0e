package prometheus

import (
	"context"
	"fmt"
	"sync"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/counters"
)

// Config configures a [Collector]. Zero fields take the defaults stated on
// each.
type Config struct {
	// Namespace is the first part of every metric name. Default:
	// "ratescope".
	Namespace string

	// Buckets are the upper bounds, in seconds, of the decision duration
	// histogram. Default: DefaultBuckets, 50µs to about 1.6s.
	Buckets []float64

	// ConstLabels are added to every metric, such as {"service": "portal"}.
	// Default: none.
	ConstLabels prom.Labels
}

// DefaultBuckets are the default bounds of the decision duration
// histogram, in seconds: from 50µs, where every decision in memory falls,
// doubling to about 1.6s, past the Redis store's timeouts.
var DefaultBuckets = prom.ExponentialBuckets(50e-6, 2, 16)

// StoreFailureCounter is what [Collector.Watch] reads
// ratescope_store_failures_total from: *core.Limiter.
type StoreFailureCounter = counters.StoreFailureCounter

// EvictionCounter is what [Collector.Watch] reads
// ratescope_store_evictions_total from: *memstore.Store.
type EvictionCounter = counters.EvictionCounter

// RedisStats is what [Collector.Watch] reads the ratescope_redis_ metrics
// from: *redisstore.Store.
type RedisStats = counters.RedisStats

// A Collector counts the decisions it observes and reads the counters of
// the values it watches, for Prometheus. Build it with [New], give its
// Observe method to core.Config.Observe and register it. It is safe for
// concurrent use.
type Collector struct {
	decisions *prom.CounterVec
	cost      *prom.CounterVec
	duration  *prom.HistogramVec

	// series caches the counters and the histogram of each label set, so
	// that Observe does not look them up by label values each time.
	series sync.Map // seriesKey -> *series

	watched counters.Set

	failures, evictions                            *prom.Desc
	calls, trips, redisFailures, failedFast, opens *prom.Desc
	breakerOpen, cacheHits, cached                 *prom.Desc
}

type seriesKey struct {
	scope   string
	kind    core.Kind
	outcome core.Outcome
}

type series struct {
	decisions, cost prom.Counter
	duration        prom.Observer
}

// New returns a Collector for cfg.
func New(cfg Config) *Collector {
	ns := cfg.Namespace
	if ns == "" {
		ns = "ratescope"
	}
	buckets := cfg.Buckets
	if buckets == nil {
		buckets = DefaultBuckets
	}
	labels := []string{"scope", "kind", "outcome"}
	desc := func(name, help string) *prom.Desc {
		return prom.NewDesc(prom.BuildFQName(ns, "", name), help, nil, cfg.ConstLabels)
	}
	return &Collector{
		decisions: prom.NewCounterVec(prom.CounterOpts{
			Namespace: ns, Name: "decisions_total", ConstLabels: cfg.ConstLabels,
			Help: "Rate limit decisions, by scope, kind of caller (anon, user) and outcome (allowed, denied, failed_open, exempt, shadow, failed_closed, local: decided in the process's memory; reset for a caller's counts cleared).",
		}, labels),
		cost: prom.NewCounterVec(prom.CounterOpts{
			Namespace: ns, Name: "decision_cost_total", ConstLabels: cfg.ConstLabels,
			Help: "Units of cost of the decided requests, by scope, kind of caller and outcome.",
		}, labels),
		duration: prom.NewHistogramVec(prom.HistogramOpts{
			Namespace: ns, Name: "decision_duration_seconds", ConstLabels: cfg.ConstLabels, Buckets: buckets,
			Help: "Time taken by rate limit decisions that asked the store, store call included, by scope.",
		}, []string{"scope"}),
		failures:      desc("store_failures_total", "Decisions that failed open, or failed closed in a scope that fails closed, because the store returned an error."),
		evictions:     desc("store_evictions_total", "Live entries the memory store evicted because the whole store was full (memstore.Config.MaxEntries)."),
		calls:         desc("redis_calls_total", "Decisions sent to Redis."),
		trips:         desc("redis_round_trips_total", "Pipelines or lone commands that carried the Redis calls."),
		redisFailures: desc("redis_failures_total", "Redis calls that failed."),
		failedFast:    desc("redis_failed_fast_total", "Decisions that failed at once, without calling Redis, while a circuit breaker was open: allowed uncounted, or refused in a scope that fails closed."),
		opens:         desc("redis_breaker_opens_total", "Times the circuit breaker opened."),
		breakerOpen:   desc("redis_breaker_open", "1 while the circuit breaker is open, 0 otherwise."),
		cacheHits:     desc("redis_cache_hits_total", "Denials answered by the over-limit cache without calling Redis."),
		cached:        desc("redis_cached_denials", "Denials the over-limit cache holds now."),
	}
}

// Observe counts the decision of e: give it to core.Config.Observe.
func (c *Collector) Observe(_ context.Context, e core.Event) {
	key := seriesKey{scope: e.Scope, kind: e.Caller.Kind(), outcome: e.Outcome}
	v, ok := c.series.Load(key)
	if !ok {
		kind, outcome := key.kind.String(), key.outcome.String()
		v, _ = c.series.LoadOrStore(key, &series{
			decisions: c.decisions.WithLabelValues(key.scope, kind, outcome),
			cost:      c.cost.WithLabelValues(key.scope, kind, outcome),
			duration:  c.duration.WithLabelValues(key.scope),
		})
	}
	s := v.(*series)
	s.decisions.Inc()
	s.cost.Add(float64(e.Cost))
	if key.outcome != core.OutcomeExempt && key.outcome != core.OutcomeReset {
		s.duration.Observe(e.Duration.Seconds())
	}
}

// Watch adds v to the values whose counters are read at each scrape: a
// [StoreFailureCounter] (*core.Limiter), an [EvictionCounter]
// (*memstore.Store), [RedisStats] (*redisstore.Store), or a value that is
// several of them. It returns an error if v is none of them.
func (c *Collector) Watch(v any) error {
	if !c.watched.Add(v) {
		return fmt.Errorf("ratescope/prometheus: %T has none of StoreFailures, Evictions or Stats", v)
	}
	return nil
}

// Describe sends the descriptions of every metric, for prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	c.decisions.Describe(ch)
	c.cost.Describe(ch)
	c.duration.Describe(ch)
	for _, d := range []*prom.Desc{c.failures, c.evictions, c.calls, c.trips, c.redisFailures,
		c.failedFast, c.opens, c.breakerOpen, c.cacheHits, c.cached} {
		ch <- d
	}
}

// Collect sends the current value of every metric, for
// prometheus.Collector. A metric of the watched values is sent only when a
// value of its kind is watched.
func (c *Collector) Collect(ch chan<- prom.Metric) {
	c.decisions.Collect(ch)
	c.cost.Collect(ch)
	c.duration.Collect(ch)

	t := c.watched.Totals()
	counter := func(d *prom.Desc, v int64) { ch <- prom.MustNewConstMetric(d, prom.CounterValue, float64(v)) }
	if t.HasStoreFailures {
		counter(c.failures, t.StoreFailures)
	}
	if t.HasEvictions {
		counter(c.evictions, t.Evictions)
	}
	if t.HasRedis {
		st := t.Redis
		counter(c.calls, st.Calls)
		counter(c.trips, st.RoundTrips)
		counter(c.redisFailures, st.Failures)
		counter(c.failedFast, st.FailedFast)
		counter(c.opens, st.BreakerOpens)
		counter(c.cacheHits, st.CacheHits)
		open := 0.0
		if st.BreakerOpen {
			open = 1
		}
		ch <- prom.MustNewConstMetric(c.breakerOpen, prom.GaugeValue, open)
		ch <- prom.MustNewConstMetric(c.cached, prom.GaugeValue, float64(st.Cached))
	}
}
