// Package metricstest makes the decisions that the tests of the metrics
// modules (prometheus, otel) count, and says what each series should
// count, so that both modules are tested on the same decisions:
//
//	lims := metricstest.New(t, metrics.Observe)
//	// ... watch lims.Limiter, lims.Down, lims.Store ...
//	lims.Decide(t)
//	for _, c := range metricstest.Counts {
//		// ... the module's series for c.Scope, c.Kind, c.Outcome counts c.N ...
//	}
//
// [NewRedis] does the same for the counters of a Redis store.
package metricstest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// DownStore is a store whose every Take fails: a limiter on it fails
// open, or closed in a scope that fails closed.
type DownStore struct{}

// Bind returns a counter whose every call returns an error.
func (DownStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(errors.New("down")).Bind("", 0, nil)
}

// Limiters are the limiters whose decisions [Limiters.Decide] makes, each
// with the Observe hook given to [New].
type Limiters struct {
	// Limiter counts in Store, on a fake clock: scope api (2/min for
	// anonymous callers, 5/min for users) and scope new (1/min, shadow).
	Limiter *core.Limiter
	// WS charges the balance scope ws in Store (warn at 100, drop at
	// 150), observed through Limiter.
	WS *balance.Guard
	// Store is Limiter's memory store.
	Store *memstore.Store
	// Down fails open: its store is a [DownStore].
	Down *core.Limiter
	// Closed fails closed in scope api, on a [DownStore].
	Closed *core.Limiter
}

// New returns the limiters, each with observe as its Config.Observe; the
// store is closed when the test ends.
func New(t testing.TB, observe func(context.Context, core.Event)) Limiters {
	t.Helper()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	clock := storetest.NewClock(storetest.Start)
	// rippled's figures with low thresholds (a policy with any figure set
	// is taken as written, so start from the default one).
	policy := balance.DefaultConfig().Policy
	policy.Warn, policy.Drop = 100, 150
	discard := slog.New(slog.DiscardHandler)
	lim, err := core.New(core.Config{
		Store: store,
		Scopes: []core.Scope{
			{Name: "api", Anon: []core.Rate{core.PerMinute(2)}, User: []core.Rate{core.PerMinute(5)}},
			{Name: "new", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}, Shadow: true},
		},
		NumProxies: new(0),
		Now:        clock.Now,
		Logger:     discard,
		Observe:    observe,
	})
	require.NoError(t, err)
	ws, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ws", Policy: policy})
	require.NoError(t, err)
	down, err := core.New(core.Config{Store: DownStore{}, NumProxies: new(0), Logger: discard, Observe: observe})
	require.NoError(t, err)
	closedScopes := core.DefaultScopes()
	closedScopes[0].FailMode = core.FailClosed
	closed, err := core.New(core.Config{Store: DownStore{}, NumProxies: new(0), Scopes: closedScopes, Logger: discard, Observe: observe})
	require.NoError(t, err)
	return Limiters{Limiter: lim, WS: ws, Store: store, Down: down, Closed: closed}
}

// Decide makes the decisions that [Counts] counts: in api, 2 anonymous
// requests allowed and 1 denied, alice's allowed, admin's exempt, bob's of
// cost 3 allowed, 1 failed open (Down) and 1 failed closed (Closed); in
// new, 1 allowed and 2 refused in shadow; in ws, a charge of 32×150 units
// allowed and one of 20 dropped; and the anonymous caller reset in api and
// in ws. The requests that asked the store in api are 7: 4 allowed, 1
// denied, 1 failed open, 1 failed closed; admin's exempt one did not.
func (l Limiters) Decide(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	api, err := core.NewGuard(core.GuardConfig{Limiter: l.Limiter, Scope: "api", Cost: 1})
	require.NoError(t, err)
	shadow, err := core.NewGuard(core.GuardConfig{Limiter: l.Limiter, Scope: "new", Cost: 1})
	require.NoError(t, err)
	anon := core.Caller{}
	h := http.Header{}
	for range 3 {
		check(ctx, api, anon, h, false) // 2 allowed, 1 denied
	}
	check(ctx, api, core.UserCaller("alice"), h, false)
	check(ctx, api, core.UserCaller("admin"), nil, true)
	for range 3 {
		check(ctx, shadow, anon, h, false) // 1 allowed, 2 shadow
	}
	_, err = l.Down.Allow(ctx, "api", anon) // failed open
	require.NoError(t, err)
	_, err = l.Closed.Allow(ctx, "api", anon) // failed closed
	require.NoError(t, err)
	_, err = l.Limiter.AllowN(ctx, "api", core.UserCaller("bob"), 3)
	require.NoError(t, err)
	l.WS.Charge(ctx, anon, 32*150) // at the drop threshold: allowed
	l.WS.Charge(ctx, anon, 20)     // dropped
	require.NoError(t, l.Limiter.Reset(ctx, "api", anon))
	require.NoError(t, l.WS.Reset(ctx, anon))
}

// check decides a request by caller with g, as a middleware does.
func check(ctx context.Context, g *core.Guard, caller core.Caller, h http.Header, exempt bool) {
	var t core.Ticket
	g.Check(ctx, &t, core.Call{Caller: caller, Header: h, Exempt: exempt})
}

// A Count is how many decisions of one series [Limiters.Decide] makes.
type Count struct {
	Scope, Kind, Outcome string
	N                    int64
}

// Counts are the decisions [Limiters.Decide] makes, one entry per series
// (scope, kind, outcome) it makes any of, and none for the others.
var Counts = []Count{
	{"api", "anon", "allowed", 2},
	{"api", "anon", "denied", 1},
	{"api", "user", "allowed", 2},
	{"api", "user", "exempt", 1},
	{"new", "anon", "allowed", 1},
	{"new", "anon", "shadow", 2},
	{"api", "anon", "failed_open", 1},
	{"api", "anon", "failed_closed", 1},
	{"ws", "anon", "allowed", 1},
	{"ws", "anon", "denied", 1},
	{"api", "anon", "reset", 1},
	{"ws", "anon", "reset", 1},
}

// Redis is a limiter on a Redis store, whose decisions [Redis.Decide]
// makes.
type Redis struct {
	// Limiter allows anonymous callers 1 request a minute in scope api,
	// counted in Store.
	Limiter *core.Limiter
	// Store is a Redis store on a redis-server started for the test.
	Store *redisstore.Store
}

// NewRedis starts a redis-server for t (failing t, never skipping, if it
// cannot) and returns a limiter on a store in it, with observe as its
// Config.Observe; the server and the client are closed when the test ends.
func NewRedis(t testing.TB, observe func(context.Context, core.Event)) Redis {
	t.Helper()
	srv := redistest.ServerFor(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	store, err := redisstore.New(redisstore.Config{Client: client, Prefix: "metricstest:" + t.Name() + ":"})
	require.NoError(t, err)
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0), Observe: observe, Rates: map[string]string{"api.anon": "1/min"}})
	require.NoError(t, err)
	return Redis{Limiter: lim, Store: store}
}

// Decide makes 3 decisions of one anonymous caller in api: 1 allowed and
// 2 denied, each sent to Redis or answered by the store's over-limit
// cache.
func (r Redis) Decide(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for range 3 {
		_, err := r.Limiter.Allow(ctx, "api", core.Caller{})
		require.NoError(t, err)
	}
}
