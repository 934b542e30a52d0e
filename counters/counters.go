package counters

import (
	"slices"
	"sync"
)

// StoreFailureCounter is a value that counts the decisions that failed
// because the store returned an error: *core.Limiter.
type StoreFailureCounter interface{ StoreFailures() int64 }

// EvictionCounter is a value that counts the entries its store evicted
// because it was full: *memstore.Store.
type EvictionCounter interface{ Evictions() int64 }

// RedisStats is a value that counts what a Redis store did:
// *redisstore.Store.
type RedisStats interface{ Stats() Redis }

// Redis counts what a Redis store (*redisstore.Store) did since it was
// built: the value its Stats method returns, and [Totals.Redis].
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

// A Set is the values whose counters [Set.Totals] reads. The zero Set is
// empty and ready to use. It is safe for concurrent use.
type Set struct {
	mu     sync.Mutex
	values []any
}

// Add adds v to the set if it is a [StoreFailureCounter], an
// [EvictionCounter], [RedisStats], or several of them, and reports whether
// it did: false, and nothing added, if v is none of them. A value added
// twice is read twice.
func (s *Set) Add(v any) bool {
	switch v.(type) {
	case StoreFailureCounter, EvictionCounter, RedisStats:
	default:
		return false
	}
	s.mu.Lock()
	s.values = append(s.values, v)
	s.mu.Unlock()
	return true
}

// Totals are the counters of the values of a [Set], each kind added up
// over the values that have it. A Has field reports whether any value of
// its kind is in the set; the counts of a kind that none has are zero.
type Totals struct {
	// StoreFailures is the sum of the StoreFailureCounters' StoreFailures.
	StoreFailures int64
	// HasStoreFailures reports whether the set holds a StoreFailureCounter.
	HasStoreFailures bool

	// Evictions is the sum of the EvictionCounters' Evictions.
	Evictions int64
	// HasEvictions reports whether the set holds an EvictionCounter.
	HasEvictions bool

	// Redis is the sum of the RedisStats' Stats, field by field; its
	// BreakerOpen is true if a breaker of any of them is open.
	Redis Redis
	// HasRedis reports whether the set holds RedisStats.
	HasRedis bool
}

// Totals reads the counters of every value of the set once and adds them
// up by kind. The values are read one after the other, not as one
// snapshot, and outside the set's lock.
func (s *Set) Totals() Totals {
	s.mu.Lock()
	values := slices.Clone(s.values)
	s.mu.Unlock()
	var t Totals
	for _, v := range values {
		if f, ok := v.(StoreFailureCounter); ok {
			t.StoreFailures += f.StoreFailures()
			t.HasStoreFailures = true
		}
		if e, ok := v.(EvictionCounter); ok {
			t.Evictions += e.Evictions()
			t.HasEvictions = true
		}
		if r, ok := v.(RedisStats); ok {
			t.Redis = addStats(t.Redis, r.Stats())
			t.HasRedis = true
		}
	}
	return t
}

// addStats returns a and b added up field by field, BreakerOpen if either
// is open.
func addStats(a, b Redis) Redis {
	return Redis{
		Calls:        a.Calls + b.Calls,
		Commands:     a.Commands + b.Commands,
		RoundTrips:   a.RoundTrips + b.RoundTrips,
		Failures:     a.Failures + b.Failures,
		Waited:       a.Waited + b.Waited,
		BreakerOpens: a.BreakerOpens + b.BreakerOpens,
		FailedFast:   a.FailedFast + b.FailedFast,
		CacheHits:    a.CacheHits + b.CacheHits,
		Cached:       a.Cached + b.Cached,
		BreakerOpen:  a.BreakerOpen || b.BreakerOpen,
		Nodes:        a.Nodes + b.Nodes,
		OpenNodes:    a.OpenNodes + b.OpenNodes,
	}
}
