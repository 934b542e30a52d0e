package counters_test

import (
	"fmt"

	"github.com/ratescope/ratescope/counters"
)

// The counts only grow, from the store's start: what happened in a period
// is the difference of two readings of redisstore.Store.Stats.
func ExampleRedis() {
	before := counters.Redis{Calls: 1000, RoundTrips: 400, CacheHits: 50} // store.Stats()
	after := counters.Redis{Calls: 1600, RoundTrips: 550, CacheHits: 250} // a minute later

	calls, trips := after.Calls-before.Calls, after.RoundTrips-before.RoundTrips
	fmt.Printf("%d decisions sent to Redis, %.1f per round trip\n", calls, float64(calls)/float64(trips))
	fmt.Printf("%d refused without calling Redis\n", after.CacheHits-before.CacheHits)
	// Output:
	// 600 decisions sent to Redis, 4.0 per round trip
	// 200 refused without calling Redis
}
