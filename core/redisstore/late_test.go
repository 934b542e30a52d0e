package redisstore_test

import (
	"context"
	"encoding/hex"
	"net/netip"
	"slices"
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
)

// lateTimeout is the Timeout of the stores of the late-answer tests.
const lateTimeout = 250 * time.Millisecond

// lateLimiter returns a limiter with scope "api" at rate, failing as mode
// says, on s and clock.
func lateLimiter(t *testing.T, s core.Store, clock *storetest.Clock, mode core.FailMode, rate core.Rate) *core.Limiter {
	t.Helper()
	lim, err := core.New(core.Config{
		Store:  s,
		Scopes: []core.Scope{{Name: "api", Anon: []core.Rate{rate}, User: []core.Rate{rate}, FailMode: mode}},
		Now:    clock.Now,
		Logger: quiet,
	})
	require.NoError(t, err)
	return lim
}

// TestLateAnswerDecidedLocally holds a round trip before go-redis writes
// it, so that a decision gets no answer within Timeout from a Redis that
// answers: a caller whose first two requests Redis counted under 3/min
// gets one more in memory, not three; a request Redis allows while the
// held one is not yet counted there is refused and given back; once the
// held round trip runs after all (the late answer), Redis has counted each
// served request once.
func TestLateAnswerDecidedLocally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	h := newHold()
	client.AddHook(h)
	clock := storetest.NewClock(time.Now())
	// A Timeout that a loaded machine (make test runs every package at
	// once, under -race) seldom misses by itself: the held round trips are
	// late whatever it is, the others must not be.
	s := newStore(t, redisstore.Config{Client: client, Timeout: lateTimeout, BreakerFailures: 10, Now: clock.Now})
	lim := lateLimiter(t, s, clock, core.FailOpen, core.PerMinute(3))
	caller := anon("192.0.2.30")

	for i := range 2 {
		d, err := lim.Allow(ctx, "api", caller)
		require.NoError(t, err)
		require.Equal(t, core.OutcomeAllowed, d.Outcome, "request %d: Redis answers", i+1)
	}

	h.armed.Store(true)
	d, err := lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	held := <-h.inFlight
	assert.Equal(t, core.OutcomeLocal, d.Outcome, "no answer within Timeout")
	assert.ErrorIs(t, d.StoreErr, core.ErrLate)
	assert.True(t, d.Allowed, "the third of 3")
	assert.Equal(t, int64(0), d.Limits()[0].Remaining, "knowing the 2 Redis counted")
	for i := range 2 {
		h.armed.Store(true)
		d, err = lim.Allow(ctx, "api", caller)
		require.NoError(t, err)
		<-h.inFlight
		assert.Equal(t, core.OutcomeLocal, d.Outcome)
		assert.ErrorIs(t, d.StoreErr, core.ErrLate)
		assert.False(t, d.Allowed, "late request %d after the third: refused in memory", i+1)
		assert.Positive(t, d.RetryAfter)
	}
	// The held round trip has not reached Redis: it counts 2, and allows
	// a fourth request, which what was decided in memory refuses.
	d, err = lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeLocal, d.Outcome, "allowed by Redis, refused knowing the request decided in memory")
	assert.False(t, d.Allowed)
	assert.Nil(t, d.StoreErr)

	// The late answers arrive after all: Redis counts one of the three
	// held requests (the first it runs), and refuses the other two.
	close(h.release)
	require.NotEmpty(t, held)
	require.Eventually(t, func() bool {
		d, err = lim.Allow(ctx, "api", caller)
		require.NoError(t, err)
		require.False(t, d.Allowed, "never a fourth")
		return d.Outcome == core.OutcomeDenied
	}, 10*time.Second, 10*time.Millisecond, "Redis counts the held request")
	other := lateLimiter(t, s, clock, core.FailOpen, core.PerMinute(3)) // another process
	d, err = other.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "Redis counts the 3 served")

	clock.Advance(time.Minute)
	d, err = other.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome, "a new window")
	assert.Equal(t, int64(2), d.Limits()[0].Remaining, "nothing left over: the 3 were counted once")
}

// TestLateAnswerCountedOnce holds one round trip so that its request is
// decided in memory, then lets it run: Redis counts it once (a second
// process sees 4 of 10 used after its own), and the process that decided
// it in memory stops counting it itself once Redis's count shows it, so
// that the caller gets its 10, not 9.
func TestLateAnswerCountedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	h := newHold()
	client.AddHook(h)
	done := &finished{}
	client.AddHook(done)
	clock := storetest.NewClock(time.Now())
	// A Timeout that a loaded machine (make test runs every package at
	// once, under -race) seldom misses by itself: the held round trips are
	// late whatever it is, the others must not be.
	s := newStore(t, redisstore.Config{Client: client, Timeout: lateTimeout, BreakerFailures: 10, Now: clock.Now})
	lim := lateLimiter(t, s, clock, core.FailOpen, core.PerMinute(10))
	caller := anon("192.0.2.31")
	for range 2 {
		d, err := lim.Allow(ctx, "api", caller)
		require.NoError(t, err)
		require.Equal(t, core.OutcomeAllowed, d.Outcome)
	}
	h.armed.Store(true)
	d, err := lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	require.Equal(t, core.OutcomeLocal, d.Outcome)
	require.True(t, d.Allowed)
	<-h.inFlight
	close(h.release)

	other := lateLimiter(t, s, clock, core.FailOpen, core.PerMinute(10))
	require.Eventually(t, func() bool {
		return done.n.Load() >= 3 // the held round trip, answered
	}, 10*time.Second, 10*time.Millisecond)
	d, err = other.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome)
	assert.Equal(t, int64(6), d.Limits()[0].Remaining, "Redis counts 2, the late one once, and this one")

	served := 0
	for range 10 {
		d, err = lim.Allow(ctx, "api", caller)
		require.NoError(t, err)
		if d.Allowed {
			served++
		}
	}
	assert.Equal(t, 6, served, "the 6 left in Redis: the late request is counted there, and no longer in memory")
}

// scripts reports whether cmds run the store's scripts: the store's round
// trips, not a new connection's set-up, which go-redis pipelines too.
func scripts(cmds []redis.Cmder) bool {
	return slices.ContainsFunc(cmds, isScript)
}

// finished is a go-redis hook that counts the store's round trips that
// ended.
type finished struct{ n atomic.Int64 }

func (f *finished) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f *finished) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (f *finished) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if scripts(cmds) {
			defer f.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// keyOf returns the Redis key of anonymous IPv4 caller addr in scope api
// with one limit a minute, under prefix.
func keyOf(prefix, addr string) string {
	a := netip.MustParseAddr(addr).As16()
	return prefix + "api:{a" + hex.EncodeToString(a[:]) + "}:60s"
}

// TestFailLocalCarryOver stops Redis in the middle of a window, under a
// scope that fails local at 3/min: a caller Redis had counted once is
// served twice more in memory, then refused; Redis is started again,
// empty. Once the process's breaker lets it reach Redis, it carries the 2
// into Redis for the window still open, in the background: another
// process then serves the caller once (the count Redis lost in its empty
// restart) and refuses it, rather than giving a fresh allowance. A second caller's own next request carries its count first.
func TestFailLocalCarryOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	prefix := uniquePrefix()
	cfg := redisstore.Config{Client: client, Prefix: prefix, Timeout: 100 * time.Millisecond, BreakerFailures: 1, BreakerBackoff: time.Second, Now: clock.Now}
	s := newStore(t, cfg)
	lim := lateLimiter(t, s, clock, core.FailLocal, core.PerMinute(3))
	x, y := anon("192.0.2.40"), anon("192.0.2.41")
	for _, c := range []core.Caller{x, y} {
		d, err := lim.Allow(ctx, "api", c)
		require.NoError(t, err)
		require.Equal(t, core.OutcomeAllowed, d.Outcome, "Redis counts one")
	}

	require.NoError(t, srv.Stop())
	// One decision opens the breaker (BreakerFailures 1): the store is down.
	_, err := lim.Allow(ctx, "api", anon("192.0.2.49"))
	require.NoError(t, err)
	require.True(t, s.Stats().BreakerOpen)
	for _, c := range []core.Caller{x, y} {
		var got []bool
		for range 3 {
			d, err := lim.Allow(ctx, "api", c)
			require.NoError(t, err)
			assert.Equal(t, core.OutcomeLocal, d.Outcome)
			assert.ErrorIs(t, d.StoreErr, redisstore.ErrUnavailable)
			got = append(got, d.Allowed)
		}
		assert.Equal(t, []bool{true, true, false}, got, "%s: 2 more in memory, knowing the one Redis counted", c)
	}

	require.NoError(t, srv.Restart()) // empty: the counts of before are gone
	clock.Advance(cfg.BreakerBackoff)
	// Another caller's decision reaches Redis: the process carries what it
	// counted in memory, in the background.
	require.Eventually(t, func() bool {
		d, err := lim.Allow(ctx, "api", anon("192.0.2.50"))
		require.NoError(t, err)
		return d.Outcome == core.OutcomeAllowed
	}, 10*time.Second, 10*time.Millisecond, "Redis answers again")
	c := newClient(t, srv.Addr)
	require.Eventually(t, func() bool {
		n, err := c.Exists(ctx, keyOf(prefix, "192.0.2.40")).Result()
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond, "x's count carried into Redis")

	other := lateLimiter(t, newStore(t, redisstore.Config{Client: newClient(t, srv.Addr), Prefix: prefix, Now: clock.Now}), clock, core.FailLocal, core.PerMinute(3))
	d, err := other.Allow(ctx, "api", x)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome, "the one Redis lost in its restart")
	d, err = other.Allow(ctx, "api", x)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "no fresh allowance: the 2 served in memory are in Redis")

	// y comes back to the same process: its request carries first.
	d, err = lim.Allow(ctx, "api", y)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome)
	assert.Equal(t, int64(0), d.Limits()[0].Remaining, "2 carried, then this one")
	d, err = other.Allow(ctx, "api", y)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome)

	// In the next window, nothing is carried any more.
	clock.Advance(time.Minute)
	d, err = other.Allow(ctx, "api", x)
	require.NoError(t, err)
	assert.Equal(t, int64(2), d.Limits()[0].Remaining)
}

// slowSome is a go-redis hook that makes the store's next n round trips take d
// longer, spent before they are written: late answers of a Redis that is
// alive.
type slowSome struct {
	n atomic.Int64
	d time.Duration
}

func (s *slowSome) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (s *slowSome) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (s *slowSome) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if scripts(cmds) && s.n.Add(-1) >= 0 {
			time.Sleep(s.d) // the round trip's latency, not a window
		}
		return next(ctx, cmds)
	}
}

// TestLateAnswersKeepTheBreakerClosed makes round trips answer after
// Timeout, with BreakerFailures 2: two round trips late in the same stall
// count as one failure, and their answers, once they come, say the node
// is alive, so a third late one does not open the breaker either. Each of
// those decisions is made in memory (ErrLate), none served uncounted.
func TestLateAnswersKeepTheBreakerClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	slow := &slowSome{d: 300 * time.Millisecond}
	client.AddHook(slow)
	done := &finished{}
	client.AddHook(done)
	clock := storetest.NewClock(time.Now())
	s := newStore(t, redisstore.Config{Client: client, Timeout: 50 * time.Millisecond, BreakerFailures: 2, Now: clock.Now})
	lim := lateLimiter(t, s, clock, core.FailOpen, core.PerMinute(10))
	d, err := lim.Allow(ctx, "api", anon("192.0.2.60"))
	require.NoError(t, err)
	require.Equal(t, core.OutcomeAllowed, d.Outcome)

	slow.n.Store(2)
	var wg sync.WaitGroup
	outcomes := make([]core.Outcome, 2)
	for i := range 2 {
		wg.Go(func() {
			d, err := lim.Allow(ctx, "api", anon("192.0.2.61"))
			assert.NoError(t, err)
			outcomes[i] = d.Outcome
		})
		time.Sleep(5 * time.Millisecond) // the second while the first is in flight: a round trip of its own
	}
	wg.Wait()
	assert.Equal(t, []core.Outcome{core.OutcomeLocal, core.OutcomeLocal}, outcomes)
	assert.False(t, s.Stats().BreakerOpen, "one stall, one failure")
	require.Eventually(t, func() bool { return done.n.Load() >= 3 }, 5*time.Second, 5*time.Millisecond, "the late answers come")
	time.Sleep(100 * time.Millisecond) // for their goroutines to tell the breaker, after go-redis returns

	slow.n.Store(1)
	d, err = lim.Allow(ctx, "api", anon("192.0.2.62"))
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeLocal, d.Outcome)
	assert.ErrorIs(t, d.StoreErr, core.ErrLate)
	st := s.Stats()
	assert.False(t, st.BreakerOpen, "the late answers reset the count of failures")
	assert.Zero(t, st.BreakerOpens)
	assert.Zero(t, lim.StoreFailures()-3, "3 decided in memory, none served uncounted")
}
