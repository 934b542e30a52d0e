package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/checks"
)

// The ids of the warnings of [Store.CheckStore].
const (
	idEvictsCounts      = "ratescope.W604"
	idRejectsWhenFull   = "ratescope.W605"
	idNoContextTimeouts = "ratescope.W606"
	idFullCoverage      = "ratescope.W607"
)

// checkTimeout bounds CheckStore when ctx has no earlier deadline.
const checkTimeout = 2 * time.Second

// CheckStore is what package checks asks a store at startup
// ([checks.Run]): it reads the settings of every Redis master (CONFIG GET)
// and of the client, and warns about those that let a caller escape its
// count:
//
//   - ratescope.W604: maxmemory is set and maxmemory-policy is allkeys-*
//     (any key may be evicted) or volatile-* (keys with a time to live may
//     be, and every ratescope key has one): a full Redis drops counts, and
//     their callers start afresh.
//   - ratescope.W605: maxmemory is set and the policy is noeviction: a
//     full Redis refuses writes, and every decision fails open.
//   - ratescope.W606: the client was built without
//     ContextTimeoutEnabled. The store still stops waiting after
//     Config.Timeout, but the connection of a command it gave up on stays
//     busy until the client's ReadTimeout.
//   - ratescope.W607: a cluster master has cluster-require-full-coverage
//     yes: when any master fails, the others refuse every command.
//
// A server that does not answer CONFIG GET (a managed Redis may refuse it)
// is left out. CheckStore waits at most two seconds, or until ctx ends; with
// ctx ended already, it reports only what it finds without Redis
// (W606).
func (s *Store) CheckStore(ctx context.Context) []checks.Message {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	var out []checks.Message
	if !contextTimeouts(s.client) {
		out = append(out, checks.Message{
			ID:    idNoContextTimeouts,
			Level: checks.Warning,
			Text:  fmt.Sprintf("the Redis client (%T) was built without ContextTimeoutEnabled: its socket reads and writes ignore the store's Timeout (%s).", s.client, s.timeout),
			Hint:  "Decisions still fail open after Timeout, but each command the store gave up on keeps a connection busy until the client's ReadTimeout (3s by default), and a stalled Redis can use up the pool. Build the client with ContextTimeoutEnabled: true.",
		})
	}

	var mu sync.Mutex
	evicts := map[string][]string{} // policy -> nodes
	var rejects, coverage []string
	read := func(ctx context.Context, c *redis.Client) error {
		cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
		if err != nil {
			return nil // not allowed or not reachable: W603 says the latter
		}
		limit, _ := strconv.ParseInt(cfg["maxmemory"], 10, 64)
		policy := cfg["maxmemory-policy"]
		var full string
		if _, ok := s.client.(*redis.ClusterClient); ok {
			if v, err := c.ConfigGet(ctx, "cluster-require-full-coverage").Result(); err == nil {
				full = v["cluster-require-full-coverage"]
			}
		}
		addr := c.Options().Addr
		mu.Lock()
		defer mu.Unlock()
		switch {
		case limit == 0:
		case strings.HasPrefix(policy, "allkeys-"), strings.HasPrefix(policy, "volatile-"):
			evicts[policy] = append(evicts[policy], addr)
		case policy == "noeviction":
			rejects = append(rejects, addr)
		}
		if full == "yes" {
			coverage = append(coverage, addr)
		}
		return nil
	}
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		if ctx.Err() == nil {
			_ = c.ForEachMaster(ctx, read)
		}
	case *redis.Client:
		if ctx.Err() == nil {
			_ = read(ctx, c)
		}
	case *redis.Ring:
		if ctx.Err() == nil {
			_ = c.ForEachShard(ctx, read)
		}
	}

	policies := make([]string, 0, len(evicts))
	for p := range evicts {
		policies = append(policies, p)
	}
	slices.Sort(policies)
	for _, p := range policies {
		out = append(out, checks.Message{
			ID:    idEvictsCounts,
			Level: checks.Warning,
			Text:  fmt.Sprintf("Redis (%s) has a memory limit and maxmemory-policy %s: when it is full it evicts keys, and a caller whose count is evicted gets its whole allowance again.", nodeList(evicts[p]), p),
			Hint:  "Every ratescope key has a time to live, so volatile-* policies evict them too. Give the counts a Redis (or a memory limit) large enough that it never fills (about 280 bytes per caller and scope with a minute and a day limit), or maxmemory 0; watch evicted_keys in INFO stats.",
		})
	}
	if rejects != nil {
		out = append(out, checks.Message{
			ID:    idRejectsWhenFull,
			Level: checks.Warning,
			Text:  fmt.Sprintf("Redis (%s) has a memory limit and maxmemory-policy noeviction: when it is full it refuses writes, and every decision fails open (allowed, not counted).", nodeList(rejects)),
			Hint:  "Give the counts a Redis (or a memory limit) large enough that it never fills (about 280 bytes per caller and scope with a minute and a day limit), and alert on used_memory near maxmemory.",
		})
	}
	if coverage != nil {
		out = append(out, checks.Message{
			ID:    idFullCoverage,
			Level: checks.Warning,
			Text:  fmt.Sprintf("the Redis Cluster (%s) requires full coverage: when one master fails, the others refuse every command, and no caller is counted.", nodeList(coverage)),
			Hint:  "Set cluster-require-full-coverage no, so that a failed master stops only the callers whose keys live on it, or give every master a replica that takes over.",
		})
	}
	return out
}

func nodeList(addrs []string) string {
	slices.Sort(addrs)
	return strings.Join(addrs, ", ")
}
