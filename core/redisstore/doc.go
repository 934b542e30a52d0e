// Package redisstore keeps ratescope's counts in Redis, so that every process
// of an API shares them: a caller gets its limits once, not once per process.
// Use it when more than one process serves the API; for one process,
// core/memstore is simpler and faster. It counts with the same arithmetic
// as every store (see [core]) and passes the same conformance suite, on a
// single server, Sentinel, a Ring and a Redis Cluster.
//
// # Keys
//
// The counts of one caller, in one scope, under one list of limits, live in
// one Redis string, named by [Config.Prefix], the scope, the caller in a
// hash tag and the limits' periods:
//
//	ratescope:api:{ualice}:60s,86400s
//
// A decision reads and writes that one key inside one Lua script, all
// limits or none, atomically with respect to every other process; the hash
// tag puts every key of a caller in one cluster slot. User ids are escaped
// one-to-one, so no id can collide with another or with an address. A key
// expires once every window is empty, so a caller that goes quiet leaves
// nothing behind. The layout, the sizes and the lifetimes are in
// docs/reference.md in the repository.
//
// # Batching
//
// Decisions asked for while an earlier round trip to a node is in flight
// travel together, up to [Config.MaxBatch] in one pipeline, and those that
// can share a script call do: on one server all of them, on a cluster those
// of one hash slot. A lone decision is sent at once. Batching changes what
// travels together, not what is counted. The decisions waiting for a node
// are bounded by [Config.MaxQueue]; a decision that finds the queue full
// waits for room, and is counted. Senders run only while there is work, so
// an idle store runs no goroutine and needs no Close. With a
// *redis.ClusterClient each master has its own queue, senders and circuit
// breaker, so a master that fails holds up only the callers whose keys
// live on it; hooks added to the ClusterClient do not see the batches (add
// them with ClusterClient.OnNewNode).
//
// # Time
//
// The script counts on the Redis server's clock by default, so every count
// of a caller follows one clock whatever the clocks of the processes that
// share it. [Config.RequestClock] counts on the limiter's clock instead, for
// tests with a fake clock.
//
// # Failures
//
// [Config.Timeout] measures Redis's answer to a batch, not the store's own
// queue or a slowed process: a sent batch waits Timeout, or, in a process
// that measures itself lagging, up to Timeout + 4 × its lag and at least
// 4 × Timeout, never more than max(40 × Timeout, 10s). A failed decision
// returns an error, and the limiter then does what the scope's
// [core.FailMode] says; one that got no answer from a node whose breaker
// is closed and that answered before also wraps [core.ErrLate], and the
// limiter decides it in memory. After [Config.BreakerFailures] stalls one
// after the other (round trips unanswered together count once; an answer
// that comes late counts as one) a node's breaker opens and its decisions
// fail at once ([ErrUnavailable]) for [Config.BreakerBackoff].
// A caller Redis has refused is answered from memory until a request could
// fit again ([Config.CacheSize]), so a blocked caller's flood costs Redis
// almost nothing. [Store.CheckStore] warns at start-up about Redis settings that
// let callers escape (W604 to W607). What was tried, and what each fault
// did, is in docs/reliability.md in the repository.
//
// A [Store] is safe for concurrent use. It does not own the Redis client:
// close the client yourself.
package redisstore
