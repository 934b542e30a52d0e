package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// TestFailClosedOnAStoppedRedis stops Redis under a limiter with a scope
// that fails closed: its requests are refused with the default Retry-After
// while calls fail, then with the breaker's back-off once it opens, while
// the scope that fails open serves them.
func TestFailClosedOnAStoppedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	s := newStore(t, redisstore.Config{
		Client:          client,
		Timeout:         200 * time.Millisecond,
		BreakerBackoff:  3 * time.Second,
		BreakerFailures: 2,
		Now:             clock.Now,
		Logger:          slog.New(slog.DiscardHandler),
	})
	lim, err := core.New(core.Config{
		Store:  s,
		Scopes: append(core.DefaultScopes(), core.Scope{Name: "login", Anon: []core.Rate{core.PerMinute(5)}, User: []core.Rate{core.PerMinute(5)}, FailMode: core.FailClosed}),
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	login, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "login", Cost: 1})
	require.NoError(t, err)
	caller := anon("192.0.2.10")

	var d core.Decision
	decideInto(login, ctx, &d, caller, http.Header{})
	require.Equal(t, core.OutcomeAllowed, d.Outcome, "Redis answers")

	require.NoError(t, srv.Stop())
	for i := range 2 {
		h := http.Header{}
		decideInto(login, ctx, &d, caller, h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome, "call %d", i+1)
		assert.NotErrorIs(t, d.StoreErr, redisstore.ErrUnavailable, "call %d goes to Redis", i+1)
		assert.Equal(t, "1", h.Get("Retry-After"), "the default: a failed call does not say how long Redis will be away")
	}
	for range 3 {
		h := http.Header{}
		decideInto(login, ctx, &d, caller, h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		assert.ErrorIs(t, d.StoreErr, redisstore.ErrUnavailable)
		var ra core.RetryAfterError
		require.True(t, errors.As(d.StoreErr, &ra))
		assert.Equal(t, 3*time.Second, ra.RetryAfter())
		assert.Equal(t, "3", h.Get("Retry-After"), "the breaker's back-off")
		assert.Equal(t, 503, d.Status())
	}
	api, err := lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.True(t, api.Allowed, "the other scope fails open")
	assert.Equal(t, core.OutcomeFailedOpen, api.Outcome)
	assert.Equal(t, int64(6), lim.StoreFailures())
}

// decidedLate reports whether d, a decision of a scope that fails open on
// a store that has just failed, was decided in memory because the answer
// was late (core.ErrLate), while the node's breaker was still closed,
// rather than served uncounted.
func decidedLate(d *core.Decision) bool {
	return d.Outcome == core.OutcomeLocal && errors.Is(d.StoreErr, core.ErrLate)
}

// retryAfter returns the Retry-After of h in whole seconds.
func retryAfter(t *testing.T, h http.Header) int {
	t.Helper()
	n, err := strconv.Atoi(h.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", h.Get("Retry-After"))
	return n
}

// TestFailClosedOnAPausedRedis pauses Redis (SIGSTOP: the connections stay
// open, nothing answers) under a limiter with a scope that fails closed.
// Every decision of the scope, 20 at once and then one by one, is refused
// once the store's Timeout passes, with a Retry-After of at least 1 and
// never longer than the breaker's back-off, and the scope that fails open
// serves meanwhile. After SIGCONT, and the back-off on the fake clock,
// requests are counted again, in the counts Redis kept.
func TestFailClosedOnAPausedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	const backoff = 3 * time.Second
	s := newStore(t, redisstore.Config{
		Client:          client,
		Timeout:         100 * time.Millisecond,
		BreakerBackoff:  backoff,
		BreakerFailures: 2,
		Now:             clock.Now,
		Logger:          slog.New(slog.DiscardHandler),
	})
	const limit = 100
	lim, err := core.New(core.Config{
		Store:  s,
		Scopes: append(core.DefaultScopes(), core.Scope{Name: "login", Anon: []core.Rate{core.PerMinute(limit)}, User: []core.Rate{core.PerMinute(limit)}, FailMode: core.FailClosed}),
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	login, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "login", Cost: 1})
	require.NoError(t, err)
	caller := anon("192.0.2.20")

	var d core.Decision
	for range 2 {
		decideInto(login, ctx, &d, caller, http.Header{})
		require.Equal(t, core.OutcomeAllowed, d.Outcome, "Redis answers")
	}
	before := s.Stats()

	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	const burst = 20
	var wg sync.WaitGroup
	decisions := make([]core.Decision, burst)
	headers := make([]http.Header, burst)
	for i := range burst {
		headers[i] = http.Header{}
		wg.Go(func() { decideInto(login, ctx, &decisions[i], caller, headers[i]) })
	}
	wg.Wait()
	for i := range burst {
		assert.Equal(t, core.OutcomeFailedClosed, decisions[i].Outcome, "decision %d of the burst", i+1)
		assert.False(t, decisions[i].Allowed)
		assert.Equal(t, http.StatusServiceUnavailable, decisions[i].Status())
		ra := retryAfter(t, headers[i])
		assert.GreaterOrEqual(t, ra, 1)
		assert.LessOrEqual(t, ra, int(backoff/time.Second), "never longer than the back-off")
	}
	// One by one until the breaker is open: at most BreakerFailures more
	// calls go to Redis and wait for the Timeout.
	for i := 0; !s.Stats().BreakerOpen; i++ {
		require.Less(t, i, 2, "the breaker opens after 2 failed round trips")
		h := http.Header{}
		decideInto(login, ctx, &d, caller, h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		want := "1" // a call that timed out does not say how long Redis will be away
		if errors.Is(d.StoreErr, redisstore.ErrUnavailable) {
			want = "3" // the burst's last failure opened the breaker meanwhile
		}
		assert.Equal(t, want, h.Get("Retry-After"))
	}
	sent := s.Stats().Calls - before.Calls
	for range 5 {
		h := http.Header{}
		decideInto(login, ctx, &d, caller, h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		assert.ErrorIs(t, d.StoreErr, redisstore.ErrUnavailable)
		assert.Equal(t, "3", h.Get("Retry-After"), "the breaker's back-off")
	}
	assert.Equal(t, sent, s.Stats().Calls-before.Calls, "an open breaker sends nothing")
	api, err := lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.True(t, api.Allowed, "the scope that fails open serves")
	assert.Equal(t, core.OutcomeFailedOpen, api.Outcome)
	failures := lim.StoreFailures()
	t.Logf("paused: %d decisions refused, %d of them sent to Redis; %+v", failures-1, sent, s.Stats())

	require.NoError(t, srv.Resume())
	resumed = true
	decideInto(login, ctx, &d, caller, http.Header{})
	var early int64 // a request counted before the back-off
	if d.Outcome != core.OutcomeAllowed {
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome, "the back-off has not passed")
	} else {
		// Allowed only if Redis, resumed, answered a call the store had
		// given up on: a late answer closes the breaker (ADR 0007).
		assert.False(t, s.Stats().BreakerOpen, "counted before the back-off only once a late answer closed the breaker")
		early = 1
	}
	require.Eventually(t, func() bool {
		clock.Advance(backoff)
		decideInto(login, ctx, &d, caller, http.Header{})
		return d.Outcome == core.OutcomeAllowed
	}, 10*time.Second, 10*time.Millisecond, "counted again once Redis answers")
	// Redis runs the commands it had received when it resumes: the
	// refused requests that reached it count against their caller. It may
	// run some after the call above, on a connection of its own.
	late := limit - 3 - early - d.Limits()[0].Remaining
	t.Logf("after resuming: %d of the %d refused calls sent to Redis were counted already", late, sent)
	assert.GreaterOrEqual(t, late, int64(0))
	assert.LessOrEqual(t, late, sent, "nothing counted that was not sent")

	fresh := anon("192.0.2.21")
	for i := range limit {
		decideInto(login, ctx, &d, fresh, http.Header{})
		require.Equal(t, core.OutcomeAllowed, d.Outcome, "request %d", i+1)
		assert.Equal(t, int64(limit-1-i), d.Limits()[0].Remaining, "counted")
	}
	decideInto(login, ctx, &d, fresh, http.Header{})
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "counted up to the limit")
}

// TestFailClosedBalanceOnAPausedRedis is TestFailClosedOnAPausedRedis for
// balance scopes: with Redis paused, every charge of the scope that fails
// closed is refused, 20 at once and then one by one, with a Retry-After of
// at least 1 and never longer than the breaker's back-off, while the
// balance scope that fails open serves; after SIGCONT the charges are
// counted again.
func TestFailClosedBalanceOnAPausedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	const backoff = 3 * time.Second
	s := newStore(t, redisstore.Config{
		Client:          client,
		Timeout:         100 * time.Millisecond,
		BreakerBackoff:  backoff,
		BreakerFailures: 2,
		Now:             clock.Now,
		Logger:          slog.New(slog.DiscardHandler),
	})
	lim, err := core.New(core.Config{
		Store:  s,
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	rpc, err := balance.New(balance.Config{Limiter: lim, Store: s, Scope: "rpc", FailMode: core.FailClosed})
	require.NoError(t, err)
	ws, err := balance.New(balance.Config{Limiter: lim, Store: s, Scope: "ws"})
	require.NoError(t, err)
	caller := anon("192.0.2.30")
	const cost = 320 // 10 of balance in the default 32 s window

	for range 2 {
		d := rpc.Charge(ctx, caller, cost)
		require.Equal(t, core.OutcomeAllowed, d.Outcome, "Redis answers")
	}
	before := s.Stats()

	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	const burst = 20
	var wg sync.WaitGroup
	decisions := make([]*balance.Decision, burst)
	for i := range burst {
		wg.Go(func() { decisions[i] = rpc.Charge(ctx, caller, cost) })
	}
	wg.Wait()
	for i, d := range decisions {
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome, "charge %d of the burst", i+1)
		assert.False(t, d.Allowed)
		assert.Zero(t, d.Balance, "not charged")
		h := http.Header{}
		d.SetHeaders(h)
		ra := retryAfter(t, h)
		assert.GreaterOrEqual(t, ra, 1)
		assert.LessOrEqual(t, ra, int(backoff/time.Second), "never longer than the back-off")
	}
	for i := 0; !s.Stats().BreakerOpen; i++ {
		require.Less(t, i, 2, "the breaker opens after 2 failed round trips")
		d := rpc.Charge(ctx, caller, cost)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		want := time.Second // a call that timed out does not say how long Redis will be away
		if errors.Is(d.StoreErr, redisstore.ErrUnavailable) {
			want = backoff // the burst's last failure opened the breaker meanwhile
		}
		assert.Equal(t, want, d.RetryAfter())
	}
	sent := s.Stats().Calls - before.Calls
	for range 5 {
		d := rpc.Charge(ctx, caller, cost)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		assert.ErrorIs(t, d.StoreErr, redisstore.ErrUnavailable)
		h := http.Header{}
		d.SetHeaders(h)
		assert.Equal(t, "3", h.Get("Retry-After"), "the breaker's back-off")
	}
	assert.Equal(t, sent, s.Stats().Calls-before.Calls, "an open breaker sends nothing")
	open := ws.Charge(ctx, caller, cost)
	assert.True(t, open.Allowed, "the balance scope that fails open serves")
	assert.Equal(t, core.OutcomeFailedOpen, open.Outcome)
	t.Logf("paused: %d charges refused, %d of them sent to Redis; %+v", lim.StoreFailures()-1, sent, s.Stats())

	require.NoError(t, srv.Resume())
	resumed = true
	var d *balance.Decision
	require.Eventually(t, func() bool {
		clock.Advance(backoff)
		d = rpc.Charge(ctx, caller, cost)
		return d.Outcome == core.OutcomeAllowed
	}, 10*time.Second, 10*time.Millisecond, "charged again once Redis answers")
	// The refused charges that reached Redis count too (Redis runs them
	// when it resumes, some maybe after the call above), less the decay of
	// the seconds the fake clock moved on.
	t.Logf("after resuming: balance %d, at most %d", d.Balance, 10*(3+sent))
	assert.LessOrEqual(t, d.Balance, 10*(3+sent), "nothing counted that was not sent")

	fresh := anon("192.0.2.31")
	for i := range 3 {
		d := rpc.Charge(ctx, fresh, cost)
		assert.Equal(t, core.OutcomeAllowed, d.Outcome, "decided by Redis")
		assert.Equal(t, int64(10*(i+1)), d.Balance, "charged")
	}
}

// TestFailClosedClusterMasterDown takes one master of a Redis Cluster of
// three down, stopped or paused, under a limiter with a scope that fails
// closed and one that fails open: the callers whose keys live on that
// master are refused in the first (Retry-After at least 1, at most the
// back-off) and served uncounted in the second, while the callers on the
// other two masters are decided as before in both, allowed and then denied
// at their limit, every decision counted: the breaker is per node.
func TestFailClosedClusterMasterDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		down func(*redistest.Server) error
	}{
		{name: "stopped", down: (*redistest.Server).Stop},
		{name: "paused", down: (*redistest.Server).Pause},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			failClosedMasterDown(t, tc.down)
		})
	}
}

// failClosedMasterDown starts a cluster of its own, takes its first master
// down with down, and checks the decisions of callers on each master (see
// TestFailClosedClusterMasterDown).
func failClosedMasterDown(t *testing.T, down func(*redistest.Server) error) {
	ctx := context.Background()
	cl := redistest.ClusterFor(t, 3)
	client := newClusterClient(t, cl)
	clock := storetest.NewClock(time.Now())
	const backoff = 3 * time.Second
	s := newStore(t, redisstore.Config{
		Client: client,
		// A Timeout well above the hiccups of a loaded machine: what is
		// tested is that one master's failure stays its own.
		Timeout:         250 * time.Millisecond,
		BreakerBackoff:  backoff,
		BreakerFailures: 2,
		Now:             clock.Now,
		Logger:          slog.New(slog.DiscardHandler),
	})
	require.NoError(t, s.Ping(ctx))
	const limit = 5
	rates := []core.Rate{core.PerMinute(limit)}
	lim, err := core.New(core.Config{
		Store:  s,
		Scopes: []core.Scope{{Name: "login", Anon: rates, User: rates, FailMode: core.FailClosed}, {Name: "api", Anon: rates, User: rates}},
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	dead := cl.Nodes()[0]
	// Two users on each master.
	users := usersOn(t, client, cl.Addrs, 2)
	onDead, healthy := users[0], slices.Concat(users[1:]...)
	decide := func(scope, id string) (core.Decision, http.Header) {
		g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: scope, Cost: 1})
		require.NoError(t, err)
		var d core.Decision
		h := http.Header{}
		decideInto(g, ctx, &d, core.UserCaller(id), h)
		return d, h
	}
	for _, id := range append(onDead, healthy...) {
		for _, scope := range []string{"login", "api"} {
			d, _ := decide(scope, id)
			require.Equal(t, core.OutcomeAllowed, d.Outcome, "%s in %s: all masters up", id, scope)
		}
	}

	require.NoError(t, down(dead))
	t.Cleanup(func() { _ = dead.Resume() })
	// Rounds 2 to limit+1: the healthy callers are allowed up to their
	// limit, then denied.
	for round := 2; round <= limit+1; round++ {
		for _, id := range onDead {
			d, h := decide("login", id)
			assert.Equal(t, core.OutcomeFailedClosed, d.Outcome, "%s round %d: refused", id, round)
			assert.Equal(t, http.StatusServiceUnavailable, d.Status())
			ra := retryAfter(t, h)
			assert.GreaterOrEqual(t, ra, 1)
			assert.LessOrEqual(t, ra, int(backoff/time.Second), "never longer than the back-off")
			d, _ = decide("api", id)
			if !decidedLate(&d) {
				assert.Equal(t, core.OutcomeFailedOpen, d.Outcome, "%s round %d: served uncounted", id, round)
			}
			assert.True(t, d.Allowed)
		}
		for _, id := range healthy {
			for _, scope := range []string{"login", "api"} {
				d, _ := decide(scope, id)
				want := core.OutcomeAllowed
				if round > limit {
					want = core.OutcomeDenied
				}
				assert.Equal(t, want, d.Outcome, "%s in %s, round %d", id, scope, round)
				require.True(t, d.Checked, "%s in %s, round %d: counted", id, scope, round)
				assert.Equal(t, int64(max(limit-round, 0)), d.Limits()[0].Remaining, "%s in %s, round %d", id, scope, round)
			}
		}
	}
	st := s.Stats()
	assert.Equal(t, 1, st.OpenNodes, "only the down master's breaker is open: %+v", st)
	d, h := decide("login", onDead[0])
	assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
	assert.ErrorIs(t, d.StoreErr, redisstore.ErrUnavailable)
	assert.Equal(t, "3", h.Get("Retry-After"), "the breaker's back-off")
	t.Logf("one master of 3 down: %d users on it, %d on the others; %+v", len(onDead), len(healthy), st)
}

// decideInto decides a request by caller with g, as a middleware does, and
// copies the decision into d.
func decideInto(g *core.Guard, ctx context.Context, d *core.Decision, caller core.Caller, h http.Header) {
	var t core.Ticket
	g.Check(ctx, &t, core.Call{Caller: caller, Header: h})
	*d = *t.Decision()
}
