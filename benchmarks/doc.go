// Package benchmarks compares ratescope with other Go rate limiters under one
// policy. It is a module of its own, so that the libraries it compares
// against never enter ratescope's go.mod; a replace directive points it at
// the ratescope source beside it.
//
// # Policy
//
// Every limiter enforces the same thing: anonymous callers, each counted by
// the peer address of its connection (RemoteAddr; no proxy header is
// trusted), with a per-minute and a per-day limit high enough that no
// request of the HTTP benchmarks is denied ([Limit] a minute and a day). A
// limiter that keeps one limit per instance is stacked: two instances, one
// per limit, each consulted on every request.
//
// # Benchmarks
//
//   - BenchmarkGin and BenchmarkEcho: one request through the framework,
//     in-process with a reused recorder, for each limiter and for no limiter
//     (the baseline), with one hot caller and with [Callers] callers in
//     turn. A limiter's overhead is its time and allocations minus the
//     baseline's.
//   - BenchmarkMemory: heap bytes per tracked caller with [MemoryCallers]
//     callers, and what is still held once the callers have gone quiet past
//     the windows and the limiter's own expiry has run.
//   - BenchmarkRedis: decisions against a real redis-server that TestMain
//     starts on a free loopback port, with the Redis round trips per
//     decision counted by a go-redis hook.
//   - BenchmarkFlood: one caller far over its limit sends as fast as it
//     can; Redis commands per denied request and denied requests a second.
//
// run.sh runs them all several times and summarises them with benchstat;
// README.md holds the results.
package benchmarks
