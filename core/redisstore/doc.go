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
// ID is "a" and 32 hex digits (the caller's network, an IPv4 address in its
// IPv4-mapped IPv6 form) for an anonymous caller, or "u" and the user id
// for a signed-in one (an id above 64 bytes is written as "sha256:" and
// its digest, so a key is small whatever the id), with '%', '{' and '}' written
// %25, %7B and %7D, in the scope too. The escaping is
// one-to-one and leaves no brace, so no user id can collide with another id,
// with an address, or end the hash tag early. PERIODS lists the periods of
// the limits in order: limiters that enforce other periods keep other
// counts, as in memstore. The value packs the time of the last admitted
// request and, per limit, the sum of its counters, a 2-byte time (the
// Prev of ADR 0001), a byte that says which limits have counters of 4
// bytes, and 21 counters of 2 bytes (4 for a limit above 65,535, or when
// another version of the service with such a limit wrote them): 105 bytes
// for a minute and a day limit. Limiters whose limits differ only in
// their numbers share the count, whatever the widths they need.
// PREFIX (default "ratescope:") lets several applications share one Redis.
//
// A caller's decaying balance ([balance.Store]) lives under the same
// prefix, scope and hash tag with "b" and the decay window in seconds in
// place of the periods (ratescope:ledger:{ualice}:b32): 24 bytes, the sum
// and two times, charged by a script of its own in one round trip, and
// expiring 4*Window+1 s after its last step.
//
// # Atomicity and cluster
//
// A decision is made inside one Lua script (EVALSHA; after a restart or
// SCRIPT FLUSH, a command that finds the script missing is sent again as
// EVAL, which loads it for the next ones): it reads the value, checks every
// limit and, only if all have room, adds the cost to all of them: all or
// nothing, atomically with respect to every other process. It takes at most
// one round trip, and one script call, which may carry the decisions of
// other concurrent requests (see Batching). A decision touches one key;
// the hash tag {ID} puts all the keys of one caller in one cluster hash
// slot, whatever the scope, so the store works unchanged with
// *redis.Client, a Sentinel failover client, *redis.ClusterClient or
// *redis.Ring.
//
// # Batching
//
// When many requests are decided at once, they travel together: the store
// sends all the decisions that were asked for while the previous batch was
// in flight as one pipeline (one write and one read), at most
// [Config.MaxBatch] (default 64) at a time, with at most two batches in
// flight per Redis node. A request that finds no batch in flight is sent
// at once: batching adds no waiting, only sharing. The Take decisions of a
// batch share script calls too (docs/adr/0110-several-decisions-per-script-call.md):
// on one server (or a Sentinel master) one EVALSHA decides them all, with
// every key in KEYS and one reading of the server's clock; on a cluster,
// those whose keys share a hash slot (the requests of one caller, mostly);
// on a Ring, those of one caller. The script makes them in order, each on
// its own key and with its own answer, as if each were a call of its own,
// so batching changes nothing of what is counted; it saves system calls and
// wake-ups, on the client and on Redis, and a call's fixed cost inside
// Redis (docs/adr/0004-redis-batching.md has the measurements).
// [Config.MaxBatch] 1 turns it off: each Take then sends its own command.
//
// The decisions waiting for a node are bounded by [Config.MaxQueue]
// (default 4096). A Take that finds the queue full waits for room, for as
// long as the node keeps answering: it is still counted (backpressure).
//
// Batches are sent by goroutines that run while decisions are waiting and
// exit when the queue has stayed empty for 100ms: a store that keeps
// deciding keeps its senders, an idle store soon runs no goroutine, and
// none needs Close. A batch is sent with a context of its own (the callers'
// contexts bound their waits, not the batch), so values carried by a
// caller's context do not reach go-redis hooks. [Store.Stats] counts the
// round trips and the script calls.
//
// # Nodes
//
// With a *redis.ClusterClient, each master is a node of its own, with its
// own queue, senders and circuit breaker: a decision goes to the master of
// its key (ClusterClient.MasterForKey), and its batch is sent on that
// master's client, so a master that fails or stalls holds up only the
// callers whose keys live on it; the others are counted as usual. A command
// that meets a redirection (MOVED or ASK, while slots move) is sent again
// through the ClusterClient, which follows it. Hooks added to the
// ClusterClient itself do not see the batches: add them to every node with
// ClusterClient.OnNewNode. The Redis Cluster must itself keep serving when
// a master fails: cluster-require-full-coverage no, or replicas
// ([Store.CheckStore] warns). With any other client the store has one node.
//
// # Time
//
// By default the script counts on the Redis server's clock: it reads TIME
// itself, so all the counts of a caller follow one clock (the master that
// holds its key, also on a Cluster), whatever the clocks of the processes
// that share them. A process whose clock is off, or steps an hour ahead for
// one request, frees nothing early and locks no one out. The server's
// clock is read in microseconds; a step back of that clock is handled as
// in every store: up to a second, it is read as standing still; beyond, the
// caller's counts are taken as made at the new time, so it waits at most a
// period.
//
// [Config.RequestClock] makes the script count on Request.Now, the
// limiter's clock, instead: tests drive the store exactly with a fake clock
// (the conformance suite does), at the price of trusting every process's
// clock (NTP). The over-limit cache always counts down on Request.Now: with
// the server's clock, its Retry-After is exact to within the difference of
// two one-way trips to Redis. Durations in a [core.Result] are whole
// microseconds; docs/adr/0003-redis-time-and-keys.md gives the reasoning.
//
// # Expiry
//
// A key lives at least the longest period after the last admitted
// request: then every window is certainly empty, since all the requests it
// counts are at or before the last admitted one. The first write in each
// bucket of the longest period sets its time to live to the period, a
// bucket and a second; the later writes of the bucket keep it (SET
// KEEPTTL, Redis 6.0 or later), which costs Redis less than setting it, so
// a key lives at most a twentieth of its period and a second longer. A refused request writes nothing, unless
// the clock stepped back far enough to move the counts. A caller that goes
// quiet leaves nothing behind.
//
// # Failures: fail open, fast
//
// [Config.Timeout] (default 50ms) measures Redis's answer, not the store's
// queue: a batch fails when its node has given no answer for Timeout since
// the batch was sent. A decision queued behind other batches waits while
// its node keeps answering, and is counted; when the node stalls, the
// decisions of the batch in flight and every decision waiting behind it
// fail. The store bounds the wait itself, on a timer of its own, whatever
// the client's settings: without ContextTimeoutEnabled a decision still
// gives up (the command's connection stays busy until the client's
// ReadTimeout).
//
// Timeout is Redis's time, not the progress of our goroutines: an answer
// is read by a goroutine woken by the network, which waits for a CPU like
// any other, so a process that lags behind (a burst of thousands of
// goroutines, CPU-bound work, the garbage collector, the race detector)
// reads answers that Redis sent in time late. An attacker who can slow
// the process must not turn the limits off by that alone, so the store
// measures its own lag while it waits (how long a yielding goroutine waits
// to run again, the runtime's record of how long goroutines waited for a
// CPU, how late its own timer fired) and blames Redis only once the
// process has caught up: at the first check that finds it on time at or
// after Timeout + 2 × the worst lag it showed, or at Timeout + 4 × that lag
// if it stays slowed, never past 40 × Timeout or 10s, whichever is longer.
// A process that is not slowed gives up on a silent Redis at about
// Timeout; a slowed one waits as long as it lags, and counts the
// decisions Redis answered. docs/adr/0041-a-slow-process-is-not-a-slow-redis.md
// has the measurements.
// An error reply (a full Redis, a key of another type) fails its decision
// but is an answer: the node has not stalled, and the decisions queued
// behind it are still sent (the breaker, below, counts it as a failure).
// A failed call returns an error, and the [core.Limiter] then allows the
// request without counting it and logs, at a limited rate. A caller that
// gave up while its command was in flight may still have been counted by
// Redis.
//
// The circuit breaker of a node counts round trips, not decisions: a batch
// that Redis answered for none of its decisions (no answer, or only error
// replies) is one failure, one that it answered is one success; a full
// queue is not a failure. After
// [Config.BreakerFailures] consecutive failures (default 3), the breaker
// opens: the decisions waiting for the node fail at once and, for
// [Config.BreakerBackoff] (default 1s), Take returns [ErrUnavailable] for
// the node's callers at once, without calling Redis. Then one trial call
// goes through; if it succeeds the breaker closes, otherwise it waits
// another back-off. Openings and closings are logged with the node's
// address (an opening at most once in 10s per node, with the number left
// out) and counted in [Store.Stats]. A caller that cancels its context is
// not held against Redis.
//
// # Startup checks
//
// [Store.CheckStore] reads the settings of every master and warns about
// those that let callers escape: a memory limit with an eviction policy
// (counts evicted, allowances reset) or with noeviction (a full Redis fails
// every decision open), a cluster that stops when one master fails, and a
// client without ContextTimeoutEnabled. Package checks reports them with
// ids ratescope.W604 to W607.
//
// # Over-limit cache
//
// While one of a caller's limits has nothing left, no process can admit
// anything for it, so its counts cannot change until a request of cost 1
// would fit again: only time passes. When Redis refuses a request in that
// state, the store remembers the answer until that moment, and answers a
// request of the same cost, for the same caller, scope and limits, from
// memory: the same refusal, its Retry-After and Reset counted down to the
// microsecond, and the Remaining Redis gave (never above the true one,
// which can only grow meanwhile). A request of another cost, one whose
// clock reads before the remembered answer's, and every request once a
// cost of 1 would fit again, ask Redis. A flood from one blocked caller
// thus costs Redis almost nothing. The cache holds at most
// [Config.CacheSize] denials (default 65,536), in shards with their own
// locks; a full shard drops expired denials first, then any (which only
// costs a call to Redis). While the breaker is open the cache is not
// consulted: the store fails open, and refuses no one.
//
// [Store.Reset] deletes a caller's key and forgets the denials this
// process remembers for it; the caches of other processes are not told,
// and answer their remembered denials until these expire: bound that with
// Config.CacheMaxAge, or set CacheSize to -1 where a reset must take
// effect everywhere at once.
//
// # Concurrency
//
// A [Store] is safe for concurrent use. Its only goroutines are the batch
// senders, which exit as soon as no decision waits (see Batching), and one
// per round trip in flight, which ends with the round trip (or, for a
// command the store gave up on, at the client's own timeout). It does not
// own the Redis client: close the client yourself.
package redisstore
