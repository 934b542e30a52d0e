// Package otel records ratescope's decisions and store counters through
// the OpenTelemetry metric API (go.opentelemetry.io/otel/metric). It is a
// module of its own (github.com/ratescope/ratescope/otel), so that a user of
// ratescope who does not use OpenTelemetry never downloads it; it counts
// what the Prometheus module (github.com/ratescope/ratescope/prometheus)
// counts, under OpenTelemetry's names. Users import it under a name such as
// rsotel.
//
// A [Recorder] is the limiter's observation hook (core.Config.Observe). Its
// instruments are created in a Meter of the MeterProvider given in
// [Config] (the global one by default); the application's SDK reads them
// and exports them, to an OTLP collector or elsewhere:
//
//	metrics, err := rsotel.New(rsotel.Config{MeterProvider: provider})
//	lim, err := core.New(core.Config{Store: store, Observe: metrics.Observe, ...})
//	...
//	metrics.Watch(lim)   // ratescope.store.failures
//	metrics.Watch(store) // the store's own counters, if it has any
//
// # Instruments
//
// The names, units and attributes follow the style of OpenTelemetry's
// semantic conventions: lower-case names in the ratescope namespace, dots
// between the parts, no unit in the name, units in UCUM (s; {decision} for
// a count of decisions), attributes in the ratescope namespace. The Meter
// is named [ScopeName].
//
// From the decisions:
//
//	ratescope.decisions          Int64ObservableCounter  {decision}  scope, kind, outcome
//	ratescope.decision.cost      Int64ObservableCounter  {unit}      scope, kind, outcome
//	ratescope.decision.duration  Float64Histogram        s           scope, outcome
//
// The Recorder counts the decisions and their cost itself, a counter per
// series, and the SDK reads the counts at each collection: on each
// decision only the duration goes through the SDK, which costs several
// times what adding to a counter does. The duration is recorded with the
// request's context, so an SDK that keeps exemplars links it to the
// request's trace; the two counters, being observed, have no exemplars.
// Decisions made before the MeterProvider is set (the global one, set
// later) are counted all the same.
//
// The attributes are ratescope.scope ([ScopeKey]), ratescope.caller.kind
// ([KindKey]: "anon" or "user") and ratescope.outcome ([OutcomeKey]:
// "allowed", "denied", "failed_open", "exempt", "shadow", "failed_closed",
// or "reset" for each reset of a caller's counts, core.Limiter.Reset, cost
// 0). No attribute names the caller: a series per address or user would
// grow without bound. Exempt decisions are made without the store and are
// left out of the histogram, as resets are, which decide no request. The
// histogram's buckets are advised ([Config.Buckets]); a View of the SDK
// may change them.
//
// From the values watched, read at each collection (observable
// instruments, no attributes):
//
//	ratescope.store.failures        Int64ObservableCounter        {decision}    core.Limiter.StoreFailures
//	ratescope.store.evictions       Int64ObservableCounter        {entry}       memstore.Store.Evictions
//	ratescope.redis.calls           Int64ObservableCounter        {call}        redisstore.Stats.Calls
//	ratescope.redis.round_trips     Int64ObservableCounter        {round_trip}  redisstore.Stats.RoundTrips
//	ratescope.redis.failures        Int64ObservableCounter        {call}        redisstore.Stats.Failures
//	ratescope.redis.failed_fast     Int64ObservableCounter        {decision}    redisstore.Stats.FailedFast
//	ratescope.redis.breaker.opens   Int64ObservableCounter        {open}        redisstore.Stats.BreakerOpens
//	ratescope.redis.breaker.open    Int64ObservableGauge          {breaker}     1 while the breaker is open
//	ratescope.redis.cache.hits      Int64ObservableCounter        {denial}      redisstore.Stats.CacheHits
//	ratescope.redis.cached_denials  Int64ObservableUpDownCounter  {denial}      redisstore.Stats.Cached
//
// An instrument of the watched values is observed only when a value of its
// kind is watched; when several values of one kind are watched (two
// limiters), their counts are added up. The constant attributes of a
// service (its name, its instance) belong on the SDK's Resource, not on
// the instruments.
//
// Exported through the SDK's Prometheus exporter, the names become those
// of the Prometheus module (ratescope_decisions_total,
// ratescope_decision_duration_seconds, ...); the attributes become labels
// such as ratescope_scope.
package otel
