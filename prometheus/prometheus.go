package prometheus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/watch"
)

// Config configures a [Collector]. Zero fields take the defaults stated on
// each.
type Config struct {
	// Namespace is the first part of every metric name: letters, digits
	// and underscores, not starting with a digit. Default: "ratescope".
	Namespace string

	// Buckets are the upper bounds, in seconds, of the decision duration
	// histogram, finite and increasing. Default: DefaultBuckets, 50µs to
	// about 1.6s.
	Buckets []float64

	// ConstLabels are added to every metric, such as {"service": "portal"}:
	// names of letters, digits and underscores, not starting with a digit
	// or "__", and none of the collector's own labels scope, kind and
	// outcome. Default: none.
	ConstLabels prom.Labels
}

// DefaultBuckets are the default bounds of the decision duration
// histogram, in seconds: from 50µs, where every decision in memory falls,
// doubling to about 1.6s, past the Redis store's timeouts.
var DefaultBuckets = prom.ExponentialBuckets(50e-6, 2, 16)

// Validate reports every problem of c, joined, each naming its field: a
// namespace or constant label that is no valid name, a bucket bound that
// is not finite or not above the one before.
func (c Config) Validate() error {
	var errs []error
	if c.Namespace != "" && !validName(c.Namespace) {
		errs = append(errs, fmt.Errorf("ratescope/prometheus: Config.Namespace %q: want letters, digits and underscores, not starting with a digit", c.Namespace))
	}
	for _, name := range slices.Sorted(maps.Keys(c.ConstLabels)) {
		switch {
		case !validName(name) || strings.HasPrefix(name, "__"):
			errs = append(errs, fmt.Errorf("ratescope/prometheus: Config.ConstLabels %q: want letters, digits and underscores, not starting with a digit or __", name))
		case name == "scope" || name == "kind" || name == "outcome":
			errs = append(errs, fmt.Errorf("ratescope/prometheus: Config.ConstLabels %q: the collector's own label", name))
		}
	}
	for i, b := range c.Buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			errs = append(errs, fmt.Errorf("ratescope/prometheus: Config.Buckets[%d] is %v, not a finite number of seconds", i, b))
		} else if i > 0 && !(b > c.Buckets[i-1]) {
			errs = append(errs, fmt.Errorf("ratescope/prometheus: Config.Buckets[%d] is %v, not above Buckets[%d] (%v): the bounds must increase", i, b, i-1, c.Buckets[i-1]))
		}
	}
	return errors.Join(errs...)
}

// validName reports whether s is a Prometheus metric or label name
// without colons.
func validName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

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

	watched watch.Set

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
	duration        prom.Observer // nil for an outcome that is not timed
}

// New returns a Collector for cfg, or the error of [Config.Validate], so
// that a bad setting fails at startup and never on a request.
func New(cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = "ratescope"
	}
	buckets := cfg.Buckets
	if buckets == nil {
		buckets = DefaultBuckets
	}
	labels := []string{"scope", "kind", "outcome"}
	outcomes := outcomeNames()
	desc := func(name, help string) *prom.Desc {
		return prom.NewDesc(prom.BuildFQName(ns, "", name), help, nil, cfg.ConstLabels)
	}
	return &Collector{
		decisions: prom.NewCounterVec(prom.CounterOpts{
			Namespace: ns, Name: "decisions_total", ConstLabels: cfg.ConstLabels,
			Help: "Rate limit decisions, by scope, kind of caller (anon, user) and outcome (" + outcomes + "; reset for a caller's counts cleared).",
		}, labels),
		cost: prom.NewCounterVec(prom.CounterOpts{
			Namespace: ns, Name: "decision_cost_total", ConstLabels: cfg.ConstLabels,
			Help: "Units of cost of the decided requests, by scope, kind of caller and outcome.",
		}, labels),
		duration: prom.NewHistogramVec(prom.HistogramOpts{
			Namespace: ns, Name: "decision_duration_seconds", ConstLabels: cfg.ConstLabels, Buckets: buckets,
			Help: "Time taken by rate limit decisions that asked the store, store call included, by scope and outcome.",
		}, []string{"scope", "outcome"}),
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
	}, nil
}

// outcomeNames lists the label values of outcome, core.Outcomes' but
// reset, for the help texts.
func outcomeNames() string {
	var names []string
	for _, o := range core.Outcomes() {
		if o != core.OutcomeReset {
			names = append(names, o.String())
		}
	}
	return strings.Join(names, ", ")
}

// Observe counts the decision of e: give it to core.Config.Observe.
func (c *Collector) Observe(_ context.Context, e core.Event) {
	key := seriesKey{scope: e.Scope, kind: e.Caller.Kind(), outcome: e.Outcome}
	v, ok := c.series.Load(key)
	if !ok {
		kind, outcome := key.kind.String(), key.outcome.String()
		s := &series{
			decisions: c.decisions.WithLabelValues(key.scope, kind, outcome),
			cost:      c.cost.WithLabelValues(key.scope, kind, outcome),
		}
		// No histogram series for an outcome that is not timed, as in the
		// otel module, so that both give the same series.
		if timed(key.outcome) {
			s.duration = c.duration.WithLabelValues(key.scope, outcome)
		}
		v, _ = c.series.LoadOrStore(key, s)
	}
	s := v.(*series)
	s.decisions.Inc()
	s.cost.Add(float64(e.Cost))
	if s.duration != nil {
		s.duration.Observe(e.Duration.Seconds())
	}
}

// timed reports whether the decisions of outcome o are timed: exempt
// decisions are made without the store, and a reset decides no request.
func timed(o core.Outcome) bool {
	return o != core.OutcomeExempt && o != core.OutcomeReset
}

// Watch adds v to the values whose counters are read at each scrape. v
// has one or more of these methods:
//
//	StoreFailures() int64    *core.Limiter       ratescope_store_failures_total
//	Evictions() int64        *memstore.Store     ratescope_store_evictions_total
//	Stats() counters.Redis   *redisstore.Store   ratescope_redis_*
//
// It returns an error if v has none of them.
func (c *Collector) Watch(v any) error {
	if err := c.watched.Add(v); err != nil {
		return fmt.Errorf("ratescope/prometheus: %w", err)
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
