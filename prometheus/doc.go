// Package prometheus exports ratescope's decisions and store counters as
// Prometheus metrics: use it when your application serves a Prometheus
// registry (the otel module is the choice for OpenTelemetry). It is a
// module of its own (github.com/ratescope/ratescope/prometheus), so that a
// user of ratescope who does not use Prometheus never downloads its client.
// Users import it under a name such as rsprom.
//
// A [Collector] is the limiter's observation hook ([core.Config.Observe])
// and a prometheus.Collector:
//
//	metrics, err := rsprom.New(rsprom.Config{})
//	...
//	lim, err := core.New(core.Config{Store: store, Observe: metrics.Observe, ...})
//	...
//	metrics.Watch(lim)   // ratescope_store_failures_total
//	metrics.Watch(store) // the store's own counters, if it has any
//	prometheus.MustRegister(metrics)
//
// # Metrics
//
// From the decisions, as they are made:
//
//	ratescope_decisions_total{scope, kind, outcome}      counter
//	ratescope_decision_cost_total{scope, kind, outcome}  counter, units
//	ratescope_decision_duration_seconds{scope, outcome}  histogram
//
// kind is "anon" or "user"; outcome is core.Outcome's String ("allowed",
// "denied", "failed_open", ...), or "reset" for each reset of a caller's
// counts (core.Limiter.Reset, cost 0). Exempt decisions are made without
// the store and are left out of the histogram, as resets are, which decide
// no request. The otel module, through the OpenTelemetry SDK's Prometheus
// exporter, gives the same metrics with the same labels, so that one
// dashboard (docs/grafana in the repository) reads either.
//
// From the values watched, read at each scrape:
//
//	ratescope_store_failures_total           counter (core.Limiter.StoreFailures)
//	ratescope_store_evictions_total          counter (memstore.Store.Evictions)
//	ratescope_redis_calls_total              counter (counters.Redis.Calls)
//	ratescope_redis_round_trips_total        counter
//	ratescope_redis_failures_total           counter
//	ratescope_redis_failed_fast_total        counter
//	ratescope_redis_breaker_opens_total      counter
//	ratescope_redis_breaker_open             gauge, 1 while the breaker is open
//	ratescope_redis_cache_hits_total         counter
//	ratescope_redis_cached_denials           gauge
//
// When several values of one kind are watched (two limiters), their counts
// are added up.
package prometheus
