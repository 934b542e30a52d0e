// Package otel records ratescope's decisions and store counters through
// the OpenTelemetry metric API (go.opentelemetry.io/otel/metric). Use it
// when your application exports metrics with OpenTelemetry; with a
// Prometheus registry, the prometheus module is the simpler choice. It is a
// module of its own (github.com/ratescope/ratescope/otel), so that a user
// of ratescope who does not use OpenTelemetry never downloads it, and
// counts what the prometheus module counts, under OpenTelemetry's names.
// Users import it under a name such as rsotel.
//
// A [Recorder] is the limiter's observation hook ([core.Config.Observe]).
// Its instruments are created in a Meter named
// github.com/ratescope/ratescope/otel, the module's import path, of the
// MeterProvider given in [Config] (the global one by default); the
// application's SDK reads and exports them:
//
//	metrics, err := rsotel.New(rsotel.Config{MeterProvider: provider})
//	lim, err := core.New(core.Config{Store: store, Observe: metrics.Observe, ...})
//	...
//	metrics.Watch(lim)   // ratescope.store.failures
//	metrics.Watch(store) // the store's own counters, if it has any
//
// # Instruments
//
// The names and units follow the style of OpenTelemetry's semantic
// conventions. From the decisions:
//
//	ratescope.decisions          Int64ObservableCounter  {decision}  scope, kind, outcome
//	ratescope.decision.cost      Int64ObservableCounter  {unit}      scope, kind, outcome
//	ratescope.decision.duration  Float64Histogram        s           scope, outcome
//
// The attributes are those of the prometheus module's labels: scope, the
// scope decided ("api", "login", ...); kind, the kind of caller ("anon" or
// "user"); and outcome, core.Outcome's String ("allowed", "denied",
// "failed_open", ...), or "reset" for a caller's counts cleared. No
// attribute names the caller: a series per address or user would grow
// without bound. The histogram has no series for exempt decisions, made
// without the store, nor for resets. Its buckets are advised
// ([Config.Buckets]); a View of the SDK may change them. The constant
// attributes of a service belong on the SDK's Resource.
//
// The values given to [Recorder.Watch] are read at each collection as
// observable instruments (ratescope.store.failures,
// ratescope.store.evictions, ratescope.redis.*), observed only when a value
// of their kind is watched and added up over several. Every instrument, its
// unit and what it counts are in docs/reference.md in the repository.
//
// Through the SDK's Prometheus exporter the names become those of the
// prometheus module (ratescope_decisions_total, ...) with the same labels
// and series, so that one dashboard reads either module; the exporter adds
// its otel_scope_ labels and target_info unless told not to.
package otel
