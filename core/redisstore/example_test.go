package redisstore_test

import (
	"context"
	"log"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
)

// A Store on one Redis server, handed to a limiter. With a Redis Cluster, pass
// a *redis.ClusterClient instead; nothing else changes.
func Example() {
	client := redis.NewClient(&redis.Options{
		Addr: "localhost:6379",
		// Let the store's Timeout bound socket reads and writes.
		ContextTimeoutEnabled: true,
	})
	defer client.Close()

	store, err := redisstore.New(redisstore.Config{
		Client:  client,
		Prefix:  "myapi:",              // default "ratescope:"
		Timeout: 30 * time.Millisecond, // default 50ms
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Ping(context.Background()); err != nil {
		log.Printf("Redis is not reachable yet; requests are allowed uncounted until it is: %v", err)
	}

	limiter, err := core.New(core.Config{Store: store, NumProxies: new(1)})
	if err != nil {
		log.Fatal(err)
	}
	_ = limiter
}

// A Store on a Redis Cluster: the same store, with a *redis.ClusterClient.
// Every key of one caller carries the hash tag {ID}, so each decision runs
// on one node.
func Example_cluster() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"redis-1:6379", "redis-2:6379", "redis-3:6379"},
		ContextTimeoutEnabled: true,
	})
	defer client.Close()

	store, err := redisstore.New(redisstore.Config{Client: client})
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := core.New(core.Config{Store: store, NumProxies: new(1)})
	if err != nil {
		log.Fatal(err)
	}
	_ = limiter
}

// What to watch: log the store's counters and the limiter's failures every
// minute. Failures and an open breaker mean requests are being allowed
// uncounted (fail open); cache hits are refusals Redis was spared.
func ExampleStore_Stats() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	store, err := redisstore.New(redisstore.Config{Client: client})
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := core.New(core.Config{Store: store, NumProxies: new(1)})
	if err != nil {
		log.Fatal(err)
	}

	go func() {
		for range time.Tick(time.Minute) {
			st := store.Stats()
			slog.Info("ratescope",
				"failed_open", limiter.StoreFailures(), // decisions allowed uncounted
				"redis_calls", st.Calls, "round_trips", st.RoundTrips, "redis_failures", st.Failures,
				"breaker_open", st.BreakerOpen, "breaker_opens", st.BreakerOpens, "failed_fast", st.FailedFast,
				"cache_hits", st.CacheHits, "cached", st.Cached,
				"waited", st.Waited, // decisions that found their node's queue full
				"nodes", st.Nodes, "open_nodes", st.OpenNodes) // per-node breakers of a cluster
		}
	}()
}

// CheckStore is what package checks runs at startup for the Redis store: it
// reads the servers' memory policy and the client's settings, and warns
// about those that let callers escape their counts.
func ExampleStore_CheckStore() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	store, err := redisstore.New(redisstore.Config{Client: client})
	if err != nil {
		log.Fatal(err)
	}
	for _, w := range store.CheckStore(context.Background()) {
		log.Printf("%s: %s %s", w.ID, w.Text, w.Hint) // e.g. ratescope.W604: Redis (localhost:6379) has a memory limit and maxmemory-policy allkeys-lru: ...
	}
}

// RequestClock makes the store count on the limiter's clock instead of the
// Redis server's, so that a test drives it with a fake clock, as it drives
// memstore. In production leave it off: the server's clock is one clock for
// all the counts of a caller.
func ExampleConfig_requestClock() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	store, err := redisstore.New(redisstore.Config{
		Client:       client,
		Prefix:       "test:", // a prefix per test keeps tests apart
		RequestClock: true,    // count on core.Config.Now, not on Redis's TIME
	})
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	limiter, err := core.New(core.Config{
		Store:      store,
		NumProxies: new(0),
		Now:        func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = limiter
	now = now.Add(time.Minute) // a minute passes for the limiter and for Redis's counts
}
