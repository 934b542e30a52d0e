// Package redisstore keeps ratescope's counts in Redis, so that every process
// of an API shares them: a caller gets its limits once, not once per process.
// It counts with the same algorithm as every ratescope store (package
// memstore is the reference) and passes the same conformance suite, on a
// single server and on a Redis Cluster.
//
// # Keys
//
// The counts of one caller, in one scope, under one list of limits, live in
// one Redis string:
//
//	PREFIX SCOPE ":{" ID "}:" PERIODS      e.g. ratescope:api:{ualice}:60s,86400s
//
// ID is "a" and 32 hex digits (the caller's [core.Caller.Key16]) for an
// anonymous caller, or "u" and the user id for a signed-in one, with '%',
// '{' and '}' written %25, %7B and %7D, in the scope too. The escaping is
// one-to-one and leaves no brace, so no user id can collide with another id,
// with an address, or end the hash tag early. PERIODS lists the periods of
// the limits in order: limiters that enforce other periods keep other
// counts, as in memstore. The value packs the time of the last request and
// five 4-byte counters per limit: 48 bytes for a minute and a day limit. PREFIX (default "ratescope:") lets several
// applications share one Redis.
//
// # Atomicity and cluster
//
// A decision is one round trip: one Lua script (EVALSHA, falling back to
// EVAL once per server after a restart) reads the value, checks every limit
// and, only if all have room, adds the cost to all of them: all or nothing,
// atomically with respect to every other process. The script touches one
// key; the hash tag {ID} puts all the keys of one caller in one cluster hash
// slot, whatever the scope, so the store works unchanged with
// *redis.Client, a Sentinel failover client, *redis.ClusterClient or
// *redis.Ring.
//
// # Time
//
// The script computes with Request.Now, the limiter's clock, in integer
// microseconds since the Unix epoch (exact in Lua's doubles), not with Redis
// TIME. Tests can then drive a store exactly with a fake clock, and the
// over-limit cache and Retry-After are computed on the same clock as the
// decision. Processes sharing a Redis must keep their clocks in step (NTP):
// a process whose clock is s ahead frees, at most, what s of time frees. A
// request older than the last one counted is taken as happening at the last
// one's time, so a clock that steps back frees nothing. Durations in a
// [core.Result] are whole microseconds; docs/adr/0003-redis-time-and-keys.md
// gives the reasoning.
//
// # Expiry
//
// Every write sets the key's time to live to the moment its longest window
// is certainly empty: at most that window's period plus one bucket (a
// quarter period). A caller that goes quiet leaves nothing behind.
//
// # Failures: fail open, fast
//
// Each call to Redis is bounded by [Config.Timeout] (default 50ms; the
// client needs ContextTimeoutEnabled for the bound to reach the socket). A
// failed call returns an error, and the [core.Limiter] then allows the
// request without counting it and logs, at a limited rate. After
// [Config.BreakerFailures] consecutive failures (default 3), a circuit
// breaker opens: for [Config.BreakerBackoff] (default 1s) Take returns
// [ErrUnavailable] at once, without calling Redis. Then one trial call goes
// through; if it succeeds the breaker closes, otherwise it waits another
// back-off. Openings and closings are logged (an opening at most once in
// 10s, with the number left out) and counted in [Store.Stats]. A caller
// that cancels its context is not held against Redis.
//
// # Over-limit cache
//
// When Redis denies a request of cost c until T (its Retry-After), the store
// remembers it and denies requests of cost c or more for the same caller,
// scope and limits until T without calling Redis. This is exact, not an
// estimate: other processes can only add counts, so the wait can only grow.
// Requests of a lower cost still ask Redis. A flood from one blocked caller
// thus costs Redis almost nothing. The cache holds at most
// [Config.CacheSize] denials (default 65,536), in shards with their own
// locks; a full shard drops expired denials first, then any (which only
// costs a call to Redis). It answers even while the breaker is open.
//
// # Concurrency
//
// A [Store] is safe for concurrent use and starts no goroutine. It does not
// own the Redis client: close the client yourself.
package redisstore
