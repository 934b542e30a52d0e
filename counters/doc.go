// Package counters adds up the counters that ratescope's limiters and
// stores keep themselves, for the code that reports them as metrics: the
// Prometheus module (github.com/ratescope/ratescope/prometheus) and the
// OpenTelemetry module (github.com/ratescope/ratescope/otel) read them
// through it at each scrape or collection, and an application that reports
// to something else can too.
//
// # The counters
//
// Three kinds of value keep counters of their own:
//
//   - a *core.Limiter counts the decisions that failed because the store
//     returned an error ([StoreFailureCounter]);
//   - a *memstore.Store counts the live entries it evicted because it was
//     full ([EvictionCounter]);
//   - a *redisstore.Store counts its calls, round trips, failures, the
//     breaker and the over-limit cache ([RedisStats]).
//
// A [Set] holds the values to read; [Set.Totals] reads each of them once
// and adds up each kind over the values that have it (two limiters' store
// failures, two Redis stores' calls), reporting which kinds it saw, so
// that a metric of a kind no value has is left out rather than reported
// as zero.
package counters
