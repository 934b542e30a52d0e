// Package watch adds up the counters that limiters and stores keep
// themselves, for the metrics modules (prometheus, otel): both keep the
// values given to their Watch method in a [Set] and read its [Totals] at
// each scrape or collection, so that they report the same counts.
//
// The metrics modules are modules of their own that import this package
// across the module boundary, and a program may build one of them against
// a newer root module: change what this package exports only by adding.
package watch

import (
	"fmt"
	"slices"
	"sync"

	"github.com/ratescope/ratescope/counters"
)

// The methods a watched value may have, each a kind of counter.
type (
	// storeFailureCounter counts the decisions that failed because the
	// store returned an error: *core.Limiter.
	storeFailureCounter interface{ StoreFailures() int64 }
	// evictionCounter counts the entries its store evicted because it was
	// full: *memstore.Store.
	evictionCounter interface{ Evictions() int64 }
	// redisStats counts what a Redis store did: *redisstore.Store.
	redisStats interface{ Stats() counters.Redis }
)

// A Set is the values whose counters [Set.Totals] reads. The zero Set is
// empty and ready to use. It is safe for concurrent use.
type Set struct {
	mu     sync.Mutex
	values []any
}

// Add adds v to the set if it has one or more of the methods
// StoreFailures() int64, Evictions() int64 and Stats() counters.Redis. It
// returns an error, and adds nothing, if v has none of them. A value added
// twice is read twice.
func (s *Set) Add(v any) error {
	switch v.(type) {
	case storeFailureCounter, evictionCounter, redisStats:
	default:
		return fmt.Errorf("%T has none of StoreFailures, Evictions or Stats", v)
	}
	s.mu.Lock()
	s.values = append(s.values, v)
	s.mu.Unlock()
	return nil
}

// Totals are the counters of the values of a [Set], each kind added up
// over the values that have it. A Has field reports whether any value of
// its kind is in the set, so that a metric of a kind no value has is left
// out rather than reported as zero; the counts of such a kind are zero.
type Totals struct {
	// StoreFailures is the sum of the values' StoreFailures.
	StoreFailures int64
	// HasStoreFailures reports whether a value has StoreFailures.
	HasStoreFailures bool

	// Evictions is the sum of the values' Evictions.
	Evictions int64
	// HasEvictions reports whether a value has Evictions.
	HasEvictions bool

	// Redis is the sum of the values' Stats, field by field; its
	// BreakerOpen is true if a breaker of any of them is open.
	Redis counters.Redis
	// HasRedis reports whether a value has Stats.
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
		if f, ok := v.(storeFailureCounter); ok {
			t.StoreFailures += f.StoreFailures()
			t.HasStoreFailures = true
		}
		if e, ok := v.(evictionCounter); ok {
			t.Evictions += e.Evictions()
			t.HasEvictions = true
		}
		if r, ok := v.(redisStats); ok {
			t.Redis = addStats(t.Redis, r.Stats())
			t.HasRedis = true
		}
	}
	return t
}

// addStats returns a and b added up field by field, BreakerOpen if either
// is open.
func addStats(a, b counters.Redis) counters.Redis {
	return counters.Redis{
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
