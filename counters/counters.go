package counters

// Redis counts what a Redis store did since it was built: the value
// redisstore.Store.Stats returns.
type Redis struct {
	// Calls is the number of decisions sent to Redis.
	Calls int64
	// Commands is the number of script calls (EVALSHA, or EVAL after
	// NOSCRIPT) that carried Calls: fewer than Calls when the take
	// decisions of a batch shared a call (ADR 0006).
	Commands int64
	// RoundTrips is the number of pipelines (or lone commands) that carried
	// Calls: fewer than Calls when decisions were batched. On a cluster a
	// batch goes to one master; a second pipeline (EVAL after NOSCRIPT, a
	// redirection) counts as another round trip.
	RoundTrips int64
	// Failures is the number of Calls that failed, a caller's own
	// cancellation aside.
	Failures int64
	// Waited is the number of Calls that found their node's queue full
	// (Config.MaxQueue) and waited for room.
	Waited int64
	// BreakerOpens is how many times a circuit breaker opened, summed over
	// the nodes.
	BreakerOpens int64
	// FailedFast is the number of decisions refused with the Redis
	// store's ErrUnavailable without calling Redis.
	FailedFast int64
	// CacheHits is the number of denials answered by the over-limit cache
	// without calling Redis.
	CacheHits int64
	// Cached is the number of denials the over-limit cache holds now.
	Cached int
	// BreakerOpen reports whether a breaker is open now (or trying Redis
	// again), on any node.
	BreakerOpen bool
	// Nodes is the number of Redis nodes the store has sent decisions to,
	// each with a breaker and a queue of its own: 1, or for a cluster one
	// per master seen plus one for the time before its map was read.
	Nodes int
	// OpenNodes is the number of nodes whose breaker is open now (or
	// trying Redis again).
	OpenNodes int
}
