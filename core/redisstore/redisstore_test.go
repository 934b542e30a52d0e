package redisstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/balance/balancetest"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// quiet discards the stores' logs in tests.
var quiet = slog.New(slog.DiscardHandler)

// counter is a go-redis hook that counts the commands a client sends (n),
// and among them the script commands, EVALSHA or EVAL, that decide (scripts)
// and the round trips that carry these (trips: one per lone command or
// pipeline). Connection set-up (HELLO, CLIENT SETINFO) counts in n only.
type counter struct{ n, scripts, trips atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		if isScript(cmd) {
			c.scripts.Add(1)
			c.trips.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		scripts := 0
		for _, cmd := range cmds {
			if isScript(cmd) {
				scripts++
			}
		}
		if scripts > 0 {
			c.scripts.Add(int64(scripts))
			c.trips.Add(1)
		}
		return next(ctx, cmds)
	}
}

// addHook adds hook to client; on a cluster, to the client of every node,
// since the store sends each master's batches to that master's client.
func addHook(client redis.UniversalClient, hook redis.Hook) {
	if c, ok := client.(*redis.ClusterClient); ok {
		c.OnNewNode(func(n *redis.Client) { n.AddHook(hook) })
		return
	}
	client.AddHook(hook)
}

func isScript(cmd redis.Cmder) bool {
	name := cmd.Name()
	return name == "evalsha" || name == "eval"
}

func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newClusterClient returns a client of cl (the shared cluster, or a test's
// own), closed when the test ends.
func newClusterClient(t testing.TB, cl *redistest.Cluster) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newStore builds a store with a unique prefix (so that the test can scan its
// own keys), a long timeout unless set, no logs unless a Logger is set, and
// counting on Request.Now, so that tests drive it with a fake clock (see
// newServerClockStore for the default, the server's clock).
func newStore(t testing.TB, cfg redisstore.Config) *redisstore.Store {
	cfg.RequestClock = true
	return newServerClockStore(t, cfg)
}

// newServerClockStore is newStore with cfg's RequestClock as it is.
func newServerClockStore(t testing.TB, cfg redisstore.Config) *redisstore.Store {
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.Prefix == "" {
		cfg.Prefix = uniquePrefix()
	}
	if cfg.Timeout == 0 {
		// Tests of counting send hundreds of concurrent requests through a
		// pool of 20 connections on a busy machine: they must not fail
		// open. Tests of failures set a Timeout of their own.
		cfg.Timeout = 5 * time.Second
	}
	s, err := redisstore.New(cfg)
	require.NoError(t, err)
	return s
}

var prefixSeq atomic.Int64

func uniquePrefix() string {
	return fmt.Sprintf("rstest-%d-%d:", time.Now().UnixNano(), prefixSeq.Add(1))
}

func anon(addr string) core.Caller {
	return core.NetworkCaller(netip.PrefixFrom(netip.MustParseAddr(addr), 32))
}

// TestConformance runs the conformance suites, of windows and of
// balances, on every way the store can be set up: a server, a cluster,
// without the over-limit cache, and unbatched (each Take sends its own
// command).
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		client   func(t *testing.T) redis.UniversalClient
		cfg      redisstore.Config
		balances bool // the cache has no part in balances
		paired   bool // every Take shares its script call (newPaired)
	}{
		{name: "server", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }, balances: true},
		{name: "cluster", client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cluster) }, balances: true},
		{name: "without cache", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }, cfg: redisstore.Config{CacheSize: -1}},
		{name: "unbatched", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }, cfg: redisstore.Config{MaxBatch: 1}, balances: true},
		{name: "server, decisions in pairs", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }, paired: true},
		{name: "cluster, decisions in pairs", client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cluster) }, paired: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Client = tc.client(t)
			t.Run("windows", func(t *testing.T) {
				storetest.Run(t, func(t *testing.T) core.Store {
					if tc.paired {
						return newPaired(t, cfg)
					}
					return newStore(t, cfg)
				})
			})
			if tc.balances {
				t.Run("balances", func(t *testing.T) {
					balancetest.Run(t, func(t *testing.T) balance.Store { return newStore(t, cfg) })
				})
			}
		})
	}
}

// paired is a Store whose every Take is sent with a companion decision of
// the same caller in another scope, whose limit it never reaches, and whose
// senders wait for both (redisstore.Gather): each decision of the
// conformance suite then shares its script call with another, before or
// after it, on a server and in one hash slot of a cluster.
type paired struct {
	*redisstore.Store
	pairs atomic.Int64
}

// newPaired returns a paired store for cfg, which checks when its test ends
// that its decisions shared script calls.
func newPaired(t *testing.T, cfg redisstore.Config) *paired {
	s := newStore(t, cfg)
	redisstore.Gather(s, 2)
	p := &paired{Store: s}
	t.Cleanup(func() {
		st := s.Stats()
		if p.pairs.Load() > 0 && st.Calls > 1 {
			t.Logf("%d pairs: %d decisions in %d commands", p.pairs.Load(), st.Calls, st.Commands)
			assert.Less(t, st.Commands, st.Calls, "decisions shared script calls")
		}
	})
	return p
}

// Bind implements core.Store.
func (p *paired) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	c, err := p.Store.Bind(scope, kind, limits)
	if err != nil {
		return nil, err
	}
	companion, err := p.Store.Bind("companion-"+scope, kind, []core.Rate{core.PerMinute(core.MaxLimit)})
	if err != nil {
		return nil, err
	}
	return &pairedCounter{Counter: c, companion: companion, p: p}, nil
}

// pairedCounter decides each request beside a companion's.
type pairedCounter struct {
	core.Counter
	companion core.Counter
	p         *paired
}

func (c *pairedCounter) Take(ctx context.Context, key core.Key, cost int64, now time.Time) (core.Result, error) {
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = c.companion.Take(ctx, key, 1, now) })
	res, err := c.Counter.Take(ctx, key, cost, now)
	wg.Wait()
	c.p.pairs.Add(1)
	return res, err
}

// TestTwoProcesses runs two stores, with clients of their own, as two
// processes sharing one Redis, batching or not.
func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	for _, maxBatch := range []int{64, 1} {
		t.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(t *testing.T) {
			t.Parallel()
			const limit, requests = 40, 300
			prefix := uniquePrefix()
			stores := []*redisstore.Store{
				newStore(t, redisstore.Config{Client: newClient(t, server.Addr), Prefix: prefix, MaxBatch: maxBatch}),
				newStore(t, redisstore.Config{Client: newClient(t, server.Addr), Prefix: prefix, MaxBatch: maxBatch}),
			}
			req := storecall.Request{Scope: "two", Caller: anon("203.0.113.9"), Limits: []core.Rate{core.PerMinute(limit), core.PerDay(1000)}, Cost: 1, Now: storetest.Start}
			var allowed atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range requests {
				wg.Go(func() {
					<-start
					res, err := storecall.Take(context.Background(), stores[i%2], req)
					if assert.NoError(t, err) && res.Allowed {
						allowed.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			assert.Equal(t, int64(limit), allowed.Load())
		})
	}
}

// serverAndCluster are the two deployments a test runs against: the
// shared server and the shared cluster, each with a client of the test's
// own.
var serverAndCluster = []struct {
	name   string
	client func(t *testing.T) redis.UniversalClient
}{
	{name: "server", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }},
	{name: "cluster", client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cluster) }},
}

func TestKeysExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range serverAndCluster {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := tc.client(t)
			prefix := uniquePrefix()
			s := newStore(t, redisstore.Config{Client: client, Prefix: prefix})
			limits := []core.Rate{core.PerMinute(10), {Limit: 100, Period: time.Hour}}
			callers := []core.Caller{anon("192.0.2.7"), core.UserCaller("bob"), core.UserCaller("{x}%")}
			for _, who := range callers {
				_, err := storecall.Take(ctx, s, storecall.Request{Scope: "exp", Caller: who, Limits: limits, Cost: 1, Now: storetest.Start.Add(7 * time.Minute)})
				require.NoError(t, err)
			}
			// Every window is empty once the last admitted request is
			// as old as the longest period; the key lives a bucket of it
			// (3 minutes) and a second longer (see TestKeysKeepTTL).
			longest := time.Hour + 3*time.Minute + time.Second
			keys := scanKeys(t, client, prefix)
			require.Len(t, keys, len(callers))
			for _, k := range keys {
				ttl, err := client.PTTL(ctx, k).Result()
				require.NoError(t, err)
				assert.LessOrEqual(t, ttl, longest, "key %q", k)
				assert.Greater(t, ttl, longest-time.Second, "key %q", k)
				// The last request (8 bytes), per limit the sum of its
				// counters (4) and Prev (2), the counters' widths (1),
				// then per limit 21 counters of 2 bytes: 8 + 1 + 2 × 48
				// = 105 bytes for two limits.
				n, err := client.StrLen(ctx, k).Result()
				require.NoError(t, err)
				assert.Equal(t, int64(105), n, "key %q: bytes", k)
			}
		})
	}
}

// TestKeysKeepTTL checks that the time to live is set by the first write in
// each bucket of the longest window, to that window's period, a bucket and a
// second, and kept by the later writes of the bucket.
func TestKeysKeepTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t, server.Addr)
	prefix := uniquePrefix()
	s := newStore(t, redisstore.Config{Client: client, Prefix: prefix})
	limits := []core.Rate{core.PerMinute(10), {Limit: 100, Period: time.Hour}}
	full := time.Hour + 3*time.Minute + time.Second
	span := storetest.Start.Truncate(3 * time.Minute).Add(3 * time.Minute) // a bucket of the hour starts
	var key string
	ttl := func(at time.Time) time.Duration {
		t.Helper()
		_, err := storecall.Take(ctx, s, storecall.Request{Scope: "ttl", Caller: anon("192.0.2.9"), Limits: limits, Cost: 1, Now: at})
		require.NoError(t, err)
		keys := scanKeys(t, client, prefix)
		require.Len(t, keys, 1)
		key = keys[0]
		d, err := client.PTTL(ctx, key).Result()
		require.NoError(t, err)
		return d
	}
	// mark sets a time to live the store never sets, to tell whether the
	// next write kept it.
	marked := full - 10*time.Second
	mark := func() { require.NoError(t, client.PExpire(ctx, key, marked).Err()) }

	first := ttl(span.Add(time.Second))
	assert.Greater(t, first, full-time.Second, "the first write of a bucket sets it")
	assert.LessOrEqual(t, first, full)
	mark()
	assert.LessOrEqual(t, ttl(span.Add(2*time.Minute)), marked, "a later write of the bucket keeps it")
	assert.Greater(t, ttl(span.Add(3*time.Minute)), full-time.Second, "the first write of the next bucket sets it again")
	// A clock stepped back by more than a second moves the counts to the
	// new time: the time to live is set again, whatever the bucket.
	mark()
	assert.Greater(t, ttl(span.Add(3*time.Minute-5*time.Second)), full-time.Second, "a merge sets it again")
}

// TestSlot checks the hash slot the store groups a cluster's decisions by
// against the cluster's own (CLUSTER KEYSLOT): keys with a hash tag, an
// empty one, none, and an unclosed one.
func TestSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClusterClient(t, cluster)
	keys := []string{"ratescope:api:{ualice}:60s,86400s", "a{}b", "plain", "{open", "x{y}z{w}", "{}", ""}
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("ratescope:s%d:{a%032x}:60s", i, i*7919))
	}
	for _, key := range keys {
		want, err := client.ClusterKeySlot(ctx, key).Result()
		require.NoError(t, err)
		assert.Equal(t, int(want), redisstore.Slot(key), "key %q", key)
	}
}

// scanKeys returns the keys under prefix, on every master of a cluster.
func scanKeys(t *testing.T, client redis.UniversalClient, prefix string) []string {
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(ctx, scan))
	case *redis.Client:
		require.NoError(t, scan(ctx, c))
	}
	return keys
}

// TestHashTag checks on the cluster that user ids meant to break the hash tag
// keep their caller apart and in one slot, and that the tag is the caller.
func TestHashTag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClusterClient(t, cluster)
	prefix := uniquePrefix()
	s := newStore(t, redisstore.Config{Client: client, Prefix: prefix})
	ids := []string{"}", "{", "{}", "}{", "%7B", "%", "%25", "a}b{c", "x:y}:60s", "ünïcode ✓", "u", "a00000000000000000000ffffc0000201"}
	limits := []core.Rate{core.PerMinute(1)}
	for _, scope := range []string{"s1", "s2"} {
		for _, id := range ids {
			res, err := storecall.Take(ctx, s, storecall.Request{Scope: scope, Caller: core.UserCaller(id), Limits: limits, Cost: 1, Now: storetest.Start})
			require.NoError(t, err)
			assert.True(t, res.Allowed, "first request of %q in %s", id, scope)
		}
	}
	res, err := storecall.Take(ctx, s, storecall.Request{Scope: "s1", Caller: anon("192.0.2.1"), Limits: limits, Cost: 1, Now: storetest.Start})
	require.NoError(t, err)
	assert.True(t, res.Allowed, "an address shares no count with a user id")
	keys := scanKeys(t, client, prefix)
	assert.Len(t, keys, 2*len(ids)+1)
	for _, k := range keys {
		open := strings.IndexByte(k, '{')
		end := strings.IndexByte(k, '}')
		require.True(t, open >= 0 && end > open, "key %q has a hash tag", k)
		assert.Equal(t, -1, strings.IndexAny(k[open+1:end], "{}"), "key %q", k)
		assert.Equal(t, -1, strings.IndexAny(k[end+1:], "{}"), "key %q: one tag", k)
	}
	for _, id := range ids {
		res, err := storecall.Take(ctx, s, storecall.Request{Scope: "s1", Caller: core.UserCaller(id), Limits: limits, Cost: 1, Now: storetest.Start})
		require.NoError(t, err)
		assert.False(t, res.Allowed, "second request of %q is counted", id)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	_, err := redisstore.New(redisstore.Config{Prefix: "a{b", Timeout: -1, MaxBatch: -1, MaxQueue: -1, BreakerFailures: -2, BreakerBackoff: -time.Second})
	require.Error(t, err)
	for _, want := range []string{"no Client", "Prefix", "Timeout", "MaxBatch", "MaxQueue", "BreakerFailures", "BreakerBackoff"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.True(t, strings.HasPrefix(err.Error(), "redisstore: "))

	d := redisstore.DefaultConfig()
	assert.Equal(t, "ratescope:", d.Prefix)
	assert.Equal(t, 50*time.Millisecond, d.Timeout)
	assert.Equal(t, 64, d.MaxBatch)
	assert.Equal(t, 4096, d.MaxQueue)
	assert.Equal(t, 3, d.BreakerFailures)
	assert.Equal(t, time.Second, d.BreakerBackoff)

	s := newStore(t, redisstore.Config{Client: newClient(t, server.Addr)})
	assert.True(t, s.Shared())
	require.NoError(t, s.Ping(context.Background()))
	require.NoError(t, newStore(t, redisstore.Config{Client: newClusterClient(t, cluster)}).Ping(context.Background()))
}

func TestBadRequest(t *testing.T) {
	t.Parallel()
	s := newStore(t, redisstore.Config{Client: newClient(t, server.Addr)})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  storecall.Request
	}{
		{name: "no limits", req: storecall.Request{Cost: 1}},
		{name: "five limits", req: storecall.Request{Cost: 1, Limits: make([]core.Rate, 5)}},
		{name: "cost 0", req: storecall.Request{Limits: []core.Rate{core.PerMinute(1)}}},
		{name: "period 1ns", req: storecall.Request{Cost: 1, Limits: []core.Rate{{Limit: 1, Period: 1}}}},
	} {
		_, err := storecall.Take(ctx, s, tc.req)
		assert.Error(t, err, tc.name)
	}
	assert.Zero(t, s.Stats().Calls, "nothing was sent")
}

var _ core.Store = (*redisstore.Store)(nil)
