package redisstore_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
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
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// hold is a go-redis hook that, once armed, stops the next pipeline before
// go-redis writes it: it hands the pipeline's commands to inFlight and
// waits for release. A test takes Redis down meanwhile, so that the batch
// is in flight when it goes.
type hold struct {
	armed    atomic.Bool
	inFlight chan []redis.Cmder // capacity 1
	release  chan struct{}
}

func newHold() *hold {
	return &hold{inFlight: make(chan []redis.Cmder, 1), release: make(chan struct{})}
}

func (h *hold) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *hold) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *hold) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.CompareAndSwap(true, false) {
			h.inFlight <- cmds
			<-h.release
		}
		return next(ctx, cmds)
	}
}

// batchScopes are the scopes of the batch-fault tests: two fail closed,
// two fail open, limit batchLimit a minute each.
var batchScopes = []string{"login", "signup", "api", "search"}

const batchLimit = 10

// faultLimiter returns a limiter on s whose scopes are batchScopes, login
// and signup failing closed, and whose clock is clock.
func faultLimiter(t *testing.T, s core.Store, clock *storetest.Clock) *core.Limiter {
	t.Helper()
	rates := []core.Rate{core.PerMinute(batchLimit)}
	var scopes []core.Scope
	for i, name := range batchScopes {
		scopes = append(scopes, core.Scope{Name: name, Anon: rates, User: rates})
		if i < 2 { // the first two fail closed
			scopes[i].FailMode = core.FailClosed
		}
	}
	lim, err := core.New(core.Config{
		Store:  s,
		Scopes: scopes,
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	return lim
}

// decide decides a request of user in scope through lim.
func decide(t *testing.T, lim *core.Limiter, scope, user string) core.Decision {
	t.Helper()
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: scope, Cost: 1})
	require.NoError(t, err)
	var d core.Decision
	decideInto(g, context.Background(), &d, core.UserCaller(user), http.Header{})
	return d
}

// batchDecision is one decision of a batch: a user in a scope.
type batchDecision struct{ scope, user string }

// decideAll decides every one of ds at once, and returns their decisions in
// the order of ds.
func decideAll(t *testing.T, lim *core.Limiter, ds []batchDecision) []core.Decision {
	t.Helper()
	out := make([]core.Decision, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() { out[i] = decide(t, lim, d.scope, d.user) })
	}
	wg.Wait()
	return out
}

// checkOneCall checks that cmds, a pipeline, is one script call that
// decides n requests.
func checkOneCall(t *testing.T, cmds []redis.Cmder, n int) {
	t.Helper()
	require.Len(t, cmds, 1, "one command")
	args := cmds[0].Args()
	require.Equal(t, "evalsha", args[0])
	assert.Equal(t, n, args[2], "one script call for %d decisions", n)
}

// checkFailed checks that every decision of ds failed, open or closed as
// its scope says.
func checkFailed(t *testing.T, ds []batchDecision, got []core.Decision) {
	t.Helper()
	for i, d := range got {
		want := core.OutcomeFailedOpen
		if ds[i].scope == "login" || ds[i].scope == "signup" {
			want = core.OutcomeFailedClosed
		}
		assert.Equal(t, want, d.Outcome, "%s in %s", ds[i].user, ds[i].scope)
		assert.Error(t, d.StoreErr, "%s in %s", ds[i].user, ds[i].scope)
	}
}

// checkCounted decides one more request of each of ds, once the breaker's
// back-off has passed on clock, and checks that Redis counted the batch's
// requests before it whole or not at all, and at most once: every one of
// them used times, one of want. It returns used.
func checkCounted(t *testing.T, lim *core.Limiter, clock *storetest.Clock, ds []batchDecision, want ...int64) int64 {
	t.Helper()
	// The breaker's trial call may meet a connection that Redis's stop
	// broke, and open it again: pass its back-off and try again until a
	// decision is counted.
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		return decide(t, lim, "api", "probe").Checked
	}, 5*time.Second, 10*time.Millisecond)
	used := int64(-1)
	for _, d := range ds {
		got := decide(t, lim, d.scope, d.user)
		require.True(t, got.Checked, "%s in %s: counted", d.user, d.scope)
		u := batchLimit - 1 - got.Limits()[0].Remaining
		if used < 0 {
			used = u
			assert.Contains(t, want, used, "%s in %s: counted %d times before", d.user, d.scope, used)
		}
		assert.Equal(t, used, u, "%s in %s: the batch counted whole or not at all", d.user, d.scope)
	}
	return used
}

// TestBatchInFlightWhenRedisStops takes one Redis down while a script call
// that decides eight requests (four users in two scopes that fail closed
// and two that fail open) is in flight: every decision of the call fails,
// open or closed as its scope says, and the call is counted whole or not
// at all, never twice. Stopped: a restarted Redis has no count, unless
// go-redis, still trying to send the call the store gave up on, reaches
// it (once). Paused (SIGSTOP): the store gives up after Timeout, Redis
// runs the call once when it resumes (go-redis does not send it again),
// and the next decisions find each request counted once.
func TestBatchInFlightWhenRedisStops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		down func(*redistest.Server) error
		up   func(*redistest.Server) error
		used []int64 // how many times the next decisions may find the batch counted
	}{
		// A restarted Redis has lost every count; but go-redis, which
		// the store leaves the command to for up to its ceiling (ADR
		// 0041), may still dial it and send the call then: once.
		{name: "stopped", down: (*redistest.Server).Stop, up: (*redistest.Server).Restart, used: []int64{0, 1}},
		// Redis holds the call in its socket buffer and runs it once
		// when it resumes.
		{name: "paused", down: (*redistest.Server).Pause, up: (*redistest.Server).Resume, used: []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.ServerFor(t)
			client := newClient(t, srv.Addr)
			h := newHold()
			client.AddHook(h)
			clock := storetest.NewClock(time.Now())
			s := newStore(t, redisstore.Config{
				Client:          client,
				Timeout:         200 * time.Millisecond,
				BreakerBackoff:  time.Second,
				BreakerFailures: 1,
				Now:             clock.Now,
				Logger:          quiet,
			})
			redisstore.Gather(s, 8)
			lim := faultLimiter(t, s, clock)
			var ds []batchDecision
			for _, user := range []string{"ann", "bob"} {
				for _, scope := range batchScopes {
					ds = append(ds, batchDecision{scope, user})
				}
			}
			// Load the script: a first call would meet NOSCRIPT.
			require.True(t, decide(t, lim, "api", "warm-up").Checked)

			h.armed.Store(true)
			var got []core.Decision
			done := make(chan struct{})
			go func() {
				defer close(done)
				got = decideAll(t, lim, ds)
			}()
			checkOneCall(t, <-h.inFlight, len(ds))
			require.NoError(t, tc.down(srv))
			t.Cleanup(func() { _ = srv.Resume() })
			close(h.release)
			<-done
			checkFailed(t, ds, got)

			require.NoError(t, tc.up(srv))
			if tc.name == "paused" {
				// Redis runs the call it holds when it resumes: its
				// eight keys and the warm-up's.
				require.Eventually(t, func() bool {
					return len(scanKeys(t, client, "")) == len(ds)+1
				}, 5*time.Second, 10*time.Millisecond)
			}
			used := checkCounted(t, lim, clock, ds, tc.used...)
			t.Logf("the batch was counted %d times; %+v", used, s.Stats())
		})
	}
}

// TestBatchInFlightWhenAClusterMasterStops stops one master of a 3-master
// cluster while a script call that decides four requests of one user (one
// hash slot, in two scopes that fail closed and two that fail open) is in
// flight to it, and decisions of users on the other masters are made at
// the same time: the call's decisions fail, open or closed as their scopes
// say; the others are counted, once.
func TestBatchInFlightWhenAClusterMasterStops(t *testing.T) {
	t.Parallel()
	cl := redistest.ClusterFor(t, 3)
	dead := cl.Nodes()[0]
	h := newHold()
	client := newClusterClient(t, cl)
	client.OnNewNode(func(n *redis.Client) {
		if n.Options().Addr == dead.Addr {
			n.AddHook(h)
		}
	})
	clock := storetest.NewClock(time.Now())
	s := newStore(t, redisstore.Config{
		Client:          client,
		Timeout:         250 * time.Millisecond,
		BreakerBackoff:  time.Second,
		BreakerFailures: 1,
		Now:             clock.Now,
		Logger:          quiet,
	})
	ctx := context.Background()
	require.NoError(t, s.Ping(ctx))
	redisstore.Gather(s, 4)
	lim := faultLimiter(t, s, clock)
	// One user on the master that stops, one on each other.
	users := usersOn(t, client, cl.Addrs, 1)
	onDead, healthy := users[0][0], slices.Concat(users[1:]...)
	var batch, others []batchDecision
	for _, scope := range batchScopes {
		batch = append(batch, batchDecision{scope, onDead})
		for _, id := range healthy {
			others = append(others, batchDecision{scope, id})
		}
	}
	// Load the script on every master, and let the store learn the
	// cluster's map.
	for _, id := range append([]string{onDead}, healthy...) {
		require.True(t, decide(t, lim, "api", id+"-warm-up").Checked)
	}

	h.armed.Store(true)
	var got, gotOthers []core.Decision
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = decideAll(t, lim, batch)
	}()
	checkOneCall(t, <-h.inFlight, len(batch))
	gotOthers = decideAll(t, lim, others)
	require.NoError(t, dead.Stop())
	close(h.release)
	<-done
	checkFailed(t, batch, got)
	for i, d := range gotOthers {
		assert.Equal(t, core.OutcomeAllowed, d.Outcome, "%s in %s, on a master that is up", others[i].user, others[i].scope)
		assert.Equal(t, int64(batchLimit-1), d.Limits()[0].Remaining, "%s in %s: counted once", others[i].user, others[i].scope)
	}
	st := s.Stats()
	assert.Equal(t, 1, st.OpenNodes, "only the stopped master's breaker opened: %+v", st)
	// The others, once more: counted once before.
	for _, d := range others {
		got := decide(t, lim, d.scope, d.user)
		require.True(t, got.Checked)
		assert.Equal(t, int64(batchLimit-2), got.Limits()[0].Remaining, "%s in %s", d.user, d.scope)
	}
	t.Logf("%+v", st)
}

// tryAgain is a go-redis hook that counts the commands answered TRYAGAIN.
type tryAgain struct{ n atomic.Int64 }

func (h *tryAgain) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *tryAgain) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *tryAgain) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if redis.HasErrorPrefix(cmd.Err(), "TRYAGAIN") {
				h.n.Add(1)
			}
		}
		return err
	}
}

// TestBatchDuringSlotMigration moves a hash slot (CLUSTER SETSLOT MIGRATING
// and IMPORTING) that holds one key of a user and not the other, and
// decides both in one script call: the master answers TRYAGAIN (it would
// run the call with one key and not the other), runs nothing, and the store
// sends each decision alone through the cluster's client, which follows ASK
// to the master importing the slot: both are counted.
func TestBatchDuringSlotMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.ClusterFor(t, 3)
	seen := &tryAgain{}
	client := newClusterClient(t, cl)
	client.OnNewNode(func(n *redis.Client) { n.AddHook(seen) })
	s := newStore(t, redisstore.Config{Client: client, Logger: quiet})
	require.NoError(t, s.Ping(ctx))
	redisstore.Gather(s, 2)
	rates := []core.Rate{core.PerMinute(batchLimit)}
	req := func(scope string) storecall.Request {
		return storecall.Request{Scope: scope, Caller: core.UserCaller("mig"), Limits: rates, Cost: 1, Now: storetest.Start}
	}
	res, err := storecall.Take(ctx, s, req("a"))
	require.NoError(t, err)
	require.True(t, res.Allowed)

	slot, err := client.ClusterKeySlot(ctx, "{umig}").Result()
	require.NoError(t, err)
	source := masterOf(t, client, "mig")
	var from, to *redis.Client
	var toID string
	for _, addr := range cl.Addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		switch {
		case addr == source:
			from = c
		case to == nil:
			to = c
			toID, err = c.ClusterMyID(ctx).Result()
			require.NoError(t, err)
		}
	}
	fromID, err := from.ClusterMyID(ctx).Result()
	require.NoError(t, err)
	require.NoError(t, to.Do(ctx, "cluster", "setslot", slot, "importing", fromID).Err())
	require.NoError(t, from.Do(ctx, "cluster", "setslot", slot, "migrating", toID).Err())
	t.Cleanup(func() {
		_ = from.Do(ctx, "cluster", "setslot", slot, "stable").Err()
		_ = to.Do(ctx, "cluster", "setslot", slot, "stable").Err()
	})

	var got [2]core.Result
	var errs [2]error
	var wg sync.WaitGroup
	for i, scope := range []string{"a", "b"} {
		wg.Go(func() { got[i], errs[i] = storecall.Take(ctx, s, req(scope)) })
	}
	wg.Wait()
	for i, scope := range []string{"a", "b"} {
		require.NoError(t, errs[i], "scope %s", scope)
		assert.True(t, got[i].Allowed, "scope %s", scope)
	}
	assert.Equal(t, int64(batchLimit-2), got[0].Limits[0].Remaining, "a: counted on the master that still holds it")
	assert.Equal(t, int64(batchLimit-1), got[1].Limits[0].Remaining, "b: a new key, on the master importing the slot")
	assert.Positive(t, seen.n.Load(), "the call of both was answered TRYAGAIN")
}

// dropProxy forwards TCP connections to a Redis, and, once armed, closes
// the connection that carries Redis's next reply instead of forwarding it:
// Redis has run the command, and the client sees the connection end.
type dropProxy struct {
	ln    net.Listener
	to    string
	armed atomic.Bool
}

func startDropProxy(t *testing.T, to string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{ln: ln, to: to}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *dropProxy) serve(c net.Conn) {
	defer c.Close()
	r, err := net.Dial("tcp", p.to)
	if err != nil {
		return
	}
	defer r.Close()
	go func() { _, _ = io.Copy(r, c) }()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if err != nil {
			return
		}
		if p.armed.CompareAndSwap(true, false) {
			return // the reply is lost; both connections close
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestBatchLostReplyIsNotSentAgain loses the reply of a script call that
// decided four requests, after Redis ran it (a proxy closes the
// connection): go-redis would send a command again after such an error
// (MaxRetries, 3 here), and the call would count its four decisions twice.
// The store's commands are not retried: the four fail, and the next
// decisions find each counted once.
func TestBatchLostReplyIsNotSentAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	proxy := startDropProxy(t, srv.Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), ContextTimeoutEnabled: true, MaxRetries: 3})
	t.Cleanup(func() { _ = client.Close() })
	s := newStore(t, redisstore.Config{Client: client, BreakerFailures: 100, CacheSize: -1})
	redisstore.Gather(s, 4)
	rates := []core.Rate{core.PerMinute(batchLimit)}
	req := func(user string) storecall.Request {
		return storecall.Request{Scope: "lost", Caller: core.UserCaller(user), Limits: rates, Cost: 1, Now: storetest.Start}
	}
	_, err := storecall.Take(ctx, s, req("warm-up"))
	require.NoError(t, err)

	users := []string{"ann", "bob", "cy", "dee"}
	before := s.Stats()
	proxy.armed.Store(true)
	var wg sync.WaitGroup
	errs := make([]error, len(users))
	for i, u := range users {
		wg.Go(func() { _, errs[i] = storecall.Take(ctx, s, req(u)) })
	}
	wg.Wait()
	assert.Equal(t, int64(1), s.Stats().Commands-before.Commands, "one call for the four")
	for i, u := range users {
		assert.Error(t, errs[i], "%s: the reply was lost", u)
	}
	for _, u := range users {
		res, err := storecall.Take(ctx, s, req(u))
		require.NoError(t, err)
		assert.Equal(t, int64(batchLimit-2), res.Limits[0].Remaining, "%s: counted once by the lost call, not twice", u)
	}
}
