package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// The tests of this file try the store as an attacker would load it: bursts
// from one caller and from many, steady load, a paused server behind a
// client that ignores context deadlines, a cluster master killed. Each
// reproduces a way a caller escaped its count before (docs/reliability.md)
// and prints what it measured. The tests of load do not run in parallel with
// the package's other tests, so that they measure the store, not the tests
// around them.

// outcome counts what a load made of its decisions.
type outcome struct {
	allowed, denied, failed atomic.Int64
	slowest                 atomic.Int64 // ns
	mu                      sync.Mutex
	firstErr                error
}

func (o *outcome) add(res core.Result, err error, took time.Duration) {
	switch {
	case err != nil:
		o.failed.Add(1)
		o.mu.Lock()
		if o.firstErr == nil {
			o.firstErr = err
		}
		o.mu.Unlock()
	case res.Allowed:
		o.allowed.Add(1)
	default:
		o.denied.Add(1)
	}
	for {
		s := o.slowest.Load()
		if int64(took) <= s || o.slowest.CompareAndSwap(s, int64(took)) {
			return
		}
	}
}

func (o *outcome) total() int64 { return o.allowed.Load() + o.denied.Load() + o.failed.Load() }

func (o *outcome) String() string {
	s := fmt.Sprintf("%d decisions: %d allowed, %d refused, %d failed open; slowest %s",
		o.total(), o.allowed.Load(), o.denied.Load(), o.failed.Load(), time.Duration(o.slowest.Load()).Round(time.Millisecond))
	o.mu.Lock()
	if o.firstErr != nil {
		s += fmt.Sprintf(" (first error: %v)", o.firstErr)
	}
	o.mu.Unlock()
	return s
}

// all sends reqs at once, one goroutine each, and counts the outcomes.
func all(s core.Store, reqs func(i int) storecall.Request, n int) *outcome {
	var o outcome
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			req := reqs(i)
			c, err := storecall.Bind(s, req)
			if err != nil {
				o.add(core.Result{}, err, 0)
				return
			}
			<-start
			t := time.Now()
			res, err := c.Take(context.Background(), req.Caller.Key(), req.Cost, req.Now)
			o.add(res, err, time.Since(t))
		})
	}
	close(start)
	wg.Wait()
	return &o
}

// clients runs n clients, each sending decisions one after the other for d,
// pausing pace between two (a client that gets answers at once must not
// take both cores from the others), and counts the outcomes.
func clients(s core.Store, n int, d, pace time.Duration, req func(client, i int) storecall.Request) *outcome {
	var o outcome
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for c := range n {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				r := req(c, i)
				counter, err := storecall.Bind(s, r)
				if err != nil {
					o.add(core.Result{}, err, 0)
					return
				}
				t := time.Now()
				res, err := counter.Take(context.Background(), r.Caller.Key(), r.Cost, r.Now)
				o.add(res, err, time.Since(t))
				if pace > 0 {
					time.Sleep(pace) // pacing a client, not waiting for a window
				}
			}
		})
	}
	wg.Wait()
	return &o
}

// ipv4 returns the anonymous caller 10.x.y.z numbered i.
func ipv4(i int) core.Caller {
	return core.NetworkCaller(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32))
}

// clients of both kinds, sized as a deployment: a pool of 20 connections a
// server (the go-redis default on 2 cores), ContextTimeoutEnabled.
var loadClients = []struct {
	name   string
	client func(t testing.TB) redis.UniversalClient
}{
	{name: "server", client: func(t testing.TB) redis.UniversalClient { return newClient(t, server.Addr) }},
	{name: "cluster", client: func(t testing.TB) redis.UniversalClient { return newClusterClient(t, cluster) }},
}

// loadStore is a store with the default Timeout (50ms) and breaker, the
// settings a deployment runs with, unless cfg sets them: newStore's long
// test timeout would hide what this file looks for.
func loadStore(t testing.TB, cfg redisstore.Config) *redisstore.Store {
	if cfg.Timeout == 0 {
		cfg.Timeout = redisstore.DefaultConfig().Timeout
	}
	if testing.Verbose() && cfg.Logger == nil {
		// The breaker's changes of state, with their times, in -v runs.
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return newStore(t, cfg)
}

// latency is a network of its own between the store and Redis: each round
// trip (a pipeline) takes d longer, spent before it is written.
type latency struct{ d time.Duration }

func (latency) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (latency) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (l latency) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		time.Sleep(l.d) // the network's latency, not a window
		return next(ctx, cmds)
	}
}

// withLatency adds l to every round trip of c, and of the nodes of a
// cluster client, which are the clients the store sends its batches on.
func withLatency(c redis.UniversalClient, l latency) redis.UniversalClient {
	if cc, ok := c.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(l) })
	}
	c.AddHook(l)
	return c
}

// burstTimeout and burstLatency set up the burst tests: a burst of
// thousands of decisions outlasts Timeout by construction (each of the
// batches it needs, at most two at a time, takes burstLatency longer
// than on loopback: 10,000 decisions need at least 79 batches one after
// the other, 2.4s), so that a store that counted its own backlog in
// Timeout fails it open on any machine; and Timeout is long enough that
// Redis itself, on a 2-core machine running the whole suite under -race
// beside other work, answers each round trip within it (with 250ms, a
// cluster node was once silent for longer while the machine ran at load
// 20). What the burst tests look for is a
// store failing open for its own backlog, not for Redis's delays:
// TestSlowProcess tries the default Timeout in a slowed process.
const (
	burstTimeout = time.Second
	burstLatency = 30 * time.Millisecond
)

// TestBurstOneCaller sends 10,000 decisions at once for one caller limited
// to 100 a minute, on a healthy Redis: exactly 100 are allowed and none
// fails open, however long the last ones queue behind the batches before
// them. (Before, the Timeout counted the queue: 9,870 to 10,000 of them
// failed open and the breaker opened for every caller.)
func TestBurstOneCaller(t *testing.T) {
	for _, tc := range loadClients {
		t.Run(tc.name, func(t *testing.T) {
			client := withLatency(tc.client(t), latency{burstLatency})
			s := loadStore(t, redisstore.Config{Client: client, CacheSize: -1, Timeout: burstTimeout})
			warmUp(t, s)
			req := storecall.Request{Scope: "burst-one", Caller: core.UserCaller("hot"), Limits: []core.Rate{core.PerMinute(100)}, Cost: 1, Now: storetest.Start}
			o := all(s, func(int) storecall.Request { return req }, 10000)
			t.Logf("one caller at 100/min, 10,000 at once, %s: %s; %+v", tc.name, o, s.Stats())
			assert.Equal(t, int64(100), o.allowed.Load(), "exactly the limit is allowed")
			assert.Zero(t, o.failed.Load(), "none fails open")
			assert.Zero(t, s.Stats().BreakerOpens)
			assert.Greater(t, time.Duration(o.slowest.Load()), 2*burstTimeout, "the backlog outlasted Timeout")
		})
	}
}

// TestBurstDistinctCallers sends one decision each for 5,000 callers at
// once: none fails open. (Before: 4 to 100% did.) Batches of 16 keep the
// backlog past Timeout by construction on the cluster too, whose three
// masters have two senders each: 313 batches, at least 52 one after the
// other, 1.56s.
func TestBurstDistinctCallers(t *testing.T) {
	for _, tc := range loadClients {
		t.Run(tc.name, func(t *testing.T) {
			client := withLatency(tc.client(t), latency{burstLatency})
			s := loadStore(t, redisstore.Config{Client: client, Timeout: burstTimeout, MaxBatch: 16})
			warmUp(t, s)
			o := all(s, func(i int) storecall.Request {
				return storecall.Request{Scope: "burst-many", Caller: ipv4(i), Limits: []core.Rate{core.PerMinute(60), core.PerDay(1000)}, Cost: 1, Now: storetest.Start}
			}, 5000)
			t.Logf("5,000 callers at once, %s: %s", tc.name, o)
			assert.Equal(t, int64(5000), o.allowed.Load(), "every caller allowed and counted")
			assert.Zero(t, o.failed.Load(), "none fails open")
			assert.Greater(t, time.Duration(o.slowest.Load()), burstTimeout, "the backlog outlasted Timeout")
		})
	}
}

// TestSlowProcess holds the rule of ADR 0007: a process slowed by its own
// CPU-bound goroutines still counts a burst on a healthy Redis at the
// default Timeout, and still gives up on a paused one. With GOMAXPROCS 1
// and 30 goroutines that only burn CPU (each preempted after about 10ms),
// the goroutine that reads Redis's answer waits 300ms or more for its
// turn, six times Timeout: before, the store gave up after 4 × Timeout
// and failed the burst open (64 to 172 of 300 in three runs).
func TestSlowProcess(t *testing.T) {
	procs := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	s := loadStore(t, redisstore.Config{Client: client, CacheSize: -1, BreakerFailures: 1000})
	warmUp(t, s)
	stop := spin(30)
	defer stop()

	req := storecall.Request{Scope: "slow", Caller: core.UserCaller("hot"), Limits: []core.Rate{core.PerMinute(100)}, Cost: 1, Now: storetest.Start}
	o := all(s, func(int) storecall.Request { return req }, 300)
	t.Logf("one caller at 100/min, 300 at once, 30 goroutines burning the only CPU: %s; %+v", o, s.Stats())
	assert.Equal(t, int64(100), o.allowed.Load(), "exactly the limit is allowed")
	assert.Zero(t, o.failed.Load(), "none fails open")
	assert.Greater(t, time.Duration(o.slowest.Load()), 4*redisstore.DefaultConfig().Timeout, "the process was slowed past the old bound")

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	o = all(s, func(int) storecall.Request { return req }, 64)
	t.Logf("the same with Redis paused: %s", o)
	assert.Equal(t, int64(64), o.failed.Load(), "a paused Redis is given up: nothing refused, nothing counted")
	// The store waits while the process lags, four times its lag at
	// most once it is due; the callers, woken when it gives up, then wait
	// for their turn.
	assert.Less(t, time.Duration(o.slowest.Load()), bound(redisstore.DefaultConfig().Timeout))
}

// steadyLoad runs 50 clients for d, each its own caller with a limit it
// stays under, through a store with timeout (0: the default), and reports
// the outcome.
func steadyLoad(t *testing.T, client redis.UniversalClient, d, timeout time.Duration) *outcome {
	t.Helper()
	s := loadStore(t, redisstore.Config{Client: client, Timeout: timeout})
	warmUp(t, s)
	start := time.Now()
	o := clients(s, 50, d, 0, func(c, i int) storecall.Request {
		return storecall.Request{Scope: "steady", Caller: ipv4(c), Limits: []core.Rate{{Limit: core.MaxLimit, Period: time.Minute}, {Limit: core.MaxLimit, Period: 24 * time.Hour}}, Cost: 1, Now: storetest.Start}
	})
	el := time.Since(start)
	t.Logf("50 clients for %s: %s, %.0f decisions/s; %+v", d, o, float64(o.total())/el.Seconds(), s.Stats())
	assert.Equal(t, o.total(), o.allowed.Load()+o.failed.Load())
	return o
}

// warmUp dials the client's connections and loads the script, so that a
// test's figures are about load, not set-up.
func warmUp(t testing.TB, s *redisstore.Store) {
	t.Helper()
	// One decision alone first: a cold store's first round trips (dialling,
	// the script missing) may take longer than a test's Timeout on a busy
	// machine, and that is the set-up, not what the tests measure.
	for i := range 20 {
		_, err := storecall.Take(context.Background(), s, storecall.Request{Scope: "warm-up", Caller: ipv4(1_000_000 + i), Limits: []core.Rate{core.PerMinute(1000)}, Cost: 1, Now: storetest.Start})
		if err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // let the breaker's back-off or the dial finish
	}
	o := all(s, func(i int) storecall.Request {
		return storecall.Request{Scope: "warm-up", Caller: ipv4(i), Limits: []core.Rate{core.PerMinute(1000)}, Cost: 1, Now: storetest.Start}
	}, 200)
	require.Zero(t, o.failed.Load(), "warm-up: %s", o)
}

// TestBackpressure bounds the queue at 8 decisions and sends 2,000 at once
// for one caller: the Takes past the bound wait for room and are counted,
// exactly 100 of them allowed.
func TestBackpressure(t *testing.T) {
	// Timeout as in the burst tests: a store that failed a full queue open
	// would fail it at once, whatever Timeout; Redis's own delays on a
	// loaded machine are not what this test looks for.
	s := loadStore(t, redisstore.Config{Client: newClient(t, server.Addr), MaxBatch: 4, MaxQueue: 8, CacheSize: -1, Timeout: burstTimeout})
	// Connections dialled and the script loaded first: the first batch of
	// a cold store makes several round trips, and this test is about the
	// queue's bound, not about a cold start.
	warmUp(t, s)
	waited := s.Stats().Waited
	req := storecall.Request{Scope: "backpressure", Caller: core.UserCaller("hot"), Limits: []core.Rate{core.PerMinute(100)}, Cost: 1, Now: storetest.Start}
	o := all(s, func(int) storecall.Request { return req }, 2000)
	st := s.Stats()
	t.Logf("2,000 at once through a queue of 8: %s; %d waited for room", o, st.Waited)
	assert.Equal(t, int64(100), o.allowed.Load())
	assert.Zero(t, o.failed.Load())
	assert.Greater(t, st.Waited, waited, "the bound was reached")
	assert.GreaterOrEqual(t, st.Calls, int64(2000+200+1), "the warm-up's and the test's 2,000")
}

// TestPausedWithoutContextTimeouts pauses Redis behind a client built
// without ContextTimeoutEnabled (its read timeout is 3s): every decision
// still gives up within Timeout, the breaker opens, an open breaker answers
// at once, and counting resumes within a second of Redis answering again.
// (Before, decisions waited up to 5s and the breaker never opened.)
func TestPausedWithoutContextTimeouts(t *testing.T) {
	t.Parallel()
	for _, maxBatch := range []int{64, 1} {
		t.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(t *testing.T) {
			t.Parallel()
			srv := redistest.ServerFor(t)
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			const timeout = 100 * time.Millisecond
			s := newStore(t, redisstore.Config{Client: client, Timeout: timeout, MaxBatch: maxBatch, BreakerBackoff: 200 * time.Millisecond})
			req := storecall.Request{Scope: "paused", Caller: core.UserCaller("pat"), Limits: []core.Rate{core.PerMinute(1000)}, Cost: 1, Now: storetest.Start}
			_, err := storecall.Take(context.Background(), s, req)
			require.NoError(t, err)

			require.NoError(t, srv.Pause())
			resumed := false
			t.Cleanup(func() {
				if !resumed {
					_ = srv.Resume()
				}
			})
			o := all(s, func(int) storecall.Request { return req }, 64)
			t.Logf("64 at once against a paused Redis, Timeout %s: %s", timeout, o)
			assert.Equal(t, int64(64), o.failed.Load(), "nothing is refused, nothing counted")
			// The store gave up by itself, not at the client's read
			// timeout (3s, "i/o timeout"): about Timeout on a quiet
			// process, longer on one that lags, as under -race beside
			// the other packages' tests (ADR 0007).
			assert.Less(t, time.Duration(o.slowest.Load()), bound(timeout), "each waits at most the documented bound")
			if assert.Error(t, o.firstErr) {
				msg := o.firstErr.Error()
				assert.True(t, strings.Contains(msg, "within Timeout") || strings.Contains(msg, "stopped answering"), "the store's own timeout: %v", o.firstErr)
			}
			var took time.Duration
			for range 10 {
				start := time.Now()
				_, err = storecall.Take(context.Background(), s, req)
				took = max(took, time.Since(start))
				if errors.Is(err, redisstore.ErrUnavailable) {
					break
				}
			}
			assert.ErrorIs(t, err, redisstore.ErrUnavailable, "the breaker opened")
			start := time.Now()
			for range 1000 {
				_, err = storecall.Take(context.Background(), s, req)
				require.ErrorIs(t, err, redisstore.ErrUnavailable)
			}
			perCall := time.Since(start) / 1000
			t.Logf("an open breaker answers in %s a decision", perCall)
			assert.Less(t, perCall, time.Millisecond, "an open breaker adds no latency")

			require.NoError(t, srv.Resume())
			resumed = true
			back := time.Now()
			require.Eventually(t, func() bool {
				_, err := storecall.Take(context.Background(), s, req)
				return err == nil
			}, 3*time.Second, 5*time.Millisecond)
			t.Logf("counting resumed %s after Redis did", time.Since(back).Round(time.Millisecond))
			assert.Less(t, time.Since(back), time.Second, "counting resumes within a second")
		})
	}
}

// masterOf returns the address of the master that holds the counts of the
// user id: the slot of the key's hash tag, "{u" + id + "}" (ADR 0005).
func masterOf(t testing.TB, c *redis.ClusterClient, id string) string {
	m, err := c.MasterForKey(context.Background(), "{u"+id+"}")
	require.NoError(t, err)
	return m.Options().Addr
}

// usersOn returns, for each master of addrs (a cluster's, in the order of
// redistest.Cluster.Addrs), the first n user ids "user-0", "user-1", ...
// whose counts live on it (see masterOf).
func usersOn(t testing.TB, c *redis.ClusterClient, addrs []string, n int) [][]string {
	t.Helper()
	ids := make([][]string, len(addrs))
	for i, left := 0, n*len(addrs); left > 0; i++ {
		require.Less(t, i, 1000)
		id := fmt.Sprintf("user-%d", i)
		m := masterOf(t, c, id)
		for j, addr := range addrs {
			if addr == m && len(ids[j]) < n {
				ids[j] = append(ids[j], id)
				left--
			}
		}
	}
	return ids
}

// TestClusterMasterDown kills one master of three under steady load:
// callers whose keys live on the other two are counted as before (at least
// 99.9% of their decisions), callers on the dead one fail open, fast once
// its breaker is open. (Before, one breaker for the store: healthy callers
// were counted 0.02% of the time while the master was down.)
func TestClusterMasterDown(t *testing.T) {
	o := clusterMasterDown(t, 2*time.Second)
	assert.GreaterOrEqual(t, o.healthyCounted(), 0.999, "callers on healthy masters are counted")
}

// downOutcome is what clusterMasterDown measured while the master was down.
type downOutcome struct {
	healthy, dead outcome
}

func (o *downOutcome) healthyCounted() float64 {
	return float64(o.healthy.total()-o.healthy.failed.Load()) / float64(o.healthy.total())
}

// clusterMasterDown starts a cluster of its own, kills one master, runs 50
// clients for d (each a user; some live on the dead master) and reports what
// happened to the callers of healthy and dead masters.
func clusterMasterDown(t *testing.T, d time.Duration) *downOutcome {
	t.Helper()
	cl := redistest.ClusterFor(t, 3)
	client := newClusterClient(t, cl)
	// What is tested is that one master's failure stays its own, not the
	// Timeout: a Timeout well above the hiccups of a shared 2-core machine
	// running the race detector keeps those from passing for failures.
	const timeout = 250 * time.Millisecond
	s := loadStore(t, redisstore.Config{Client: client, Timeout: timeout})
	require.NoError(t, s.Ping(context.Background()))
	warmUp(t, s) // connections to every master dialled first
	const users = 50
	ids := make([]string, users)
	on := map[string]int{}
	for i := range ids {
		ids[i] = fmt.Sprintf("user-%d", i)
		on[masterOf(t, client, ids[i])]++
	}
	req := func(c, _ int) storecall.Request {
		return storecall.Request{Scope: "master-down", Caller: core.UserCaller(ids[c]), Limits: []core.Rate{{Limit: core.MaxLimit, Period: time.Minute}}, Cost: 1, Now: storetest.Start}
	}
	before := clients(s, users, 200*time.Millisecond, 0, req)
	require.Zero(t, before.failed.Load(), "all masters up: %s", before)

	dead := cl.Nodes()[0]
	require.NoError(t, dead.Stop())
	var o downOutcome
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	var fastFails []time.Duration // ErrUnavailable after the breaker opened
	var mu sync.Mutex
	// opened is when the dead master's breaker was first seen open.
	var opened atomic.Int64
	wg.Go(func() {
		for time.Now().Before(stop) && opened.Load() == 0 {
			if s.Stats().OpenNodes > 0 {
				opened.Store(time.Now().UnixNano())
			}
			time.Sleep(time.Millisecond) // polling the store's state
		}
	})
	for c := range users {
		out := &o.healthy
		if masterOf(t, client, ids[c]) == dead.Addr {
			out = &o.dead
		}
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				t0 := time.Now()
				res, err := storecall.Take(context.Background(), s, req(c, i))
				took := time.Since(t0)
				out.add(res, err, took)
				if at := opened.Load(); at != 0 && t0.UnixNano() > at && errors.Is(err, redisstore.ErrUnavailable) {
					mu.Lock()
					fastFails = append(fastFails, took)
					mu.Unlock()
				}
				if err != nil {
					// A caller that fails open at once would otherwise
					// take both cores from the others.
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	t.Logf("one master of 3 down for %s, %d users (%v by master):\n  healthy masters: %s (%.3f%% counted)\n  dead master: %s\n  %+v",
		d, users, on, &o.healthy, 100*o.healthyCounted(), &o.dead, st)
	require.NotEmpty(t, fastFails, "the dead master's breaker opened")
	slices.Sort(fastFails)
	p99 := fastFails[len(fastFails)*99/100]
	t.Logf("with the breaker open, a decision on the dead master took %s (median), %s (99th percentile)", fastFails[len(fastFails)/2], p99)
	assert.Less(t, p99, 5*time.Millisecond, "an open breaker answers at once")
	assert.Positive(t, o.dead.total(), "some callers live on the dead master")
	assert.Equal(t, o.dead.total(), o.dead.failed.Load(), "callers on the dead master fail open: nothing refused")
	// A slowed process waits on while it lags (ADR 0007); the breaker
	// opened within the run (fastFails above).
	assert.Less(t, time.Duration(o.dead.slowest.Load()), bound(timeout), "within the bound")
	assert.Equal(t, 1, st.OpenNodes, "only the dead master's breaker is open")
	return &o
}

// TestBreakerRecoversUnderLoad pauses Redis under 300 decisions at once
// through a tiny queue, so that the queue is failed while Takes wait for
// room, and the breaker opens and lets trial calls through meanwhile; then
// Redis resumes under steady load: the breaker must close and counting
// resume. (A Take that waited for room once took the trial call's place and
// left, and the breaker stayed open for good.)
func TestBreakerRecoversUnderLoad(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	s := newStore(t, redisstore.Config{Client: client, Timeout: 50 * time.Millisecond, MaxBatch: 2, MaxQueue: 2, BreakerFailures: 1, BreakerBackoff: 10 * time.Millisecond})
	req := func(c, _ int) storecall.Request {
		return storecall.Request{Scope: "recover", Caller: ipv4(c), Limits: []core.Rate{core.PerMinute(core.MaxLimit)}, Cost: 1, Now: storetest.Start}
	}
	warmUp(t, s)
	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	for range 3 {
		o := all(s, func(i int) storecall.Request { return req(i, 0) }, 300)
		require.Equal(t, int64(300), o.failed.Load(), "Redis is paused")
	}
	require.NoError(t, srv.Resume())
	resumed = true
	o := clients(s, 20, time.Second, time.Millisecond, req)
	t.Logf("a second after Redis resumed: %s; %+v", o, s.Stats())
	after := clients(s, 20, 300*time.Millisecond, time.Millisecond, req)
	assert.Zero(t, after.failed.Load(), "counting resumed: %s", after)
	assert.False(t, s.Stats().BreakerOpen)
}
