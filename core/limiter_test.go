package core_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// newLimiter builds a limiter on a fresh memory store and a fake clock
// standing at storetest.Start, unless cfg says otherwise.
func newLimiter(t *testing.T, cfg core.Config) *core.Limiter {
	t.Helper()
	if cfg.Store == nil {
		s := memstore.New(memstore.Config{SweepInterval: -1})
		cfg.Store = s
	}
	if cfg.Now == nil {
		cfg.Now = storetest.NewClock(storetest.Start).Now
	}
	lim, err := core.New(cfg)
	require.NoError(t, err)
	return lim
}

// shadowAPI returns the default scopes with "api" in shadow mode.
func shadowAPI() []core.Scope {
	s := core.DefaultScopes()
	s[0].Shadow = true
	return s
}

// failClosedAPI returns the default scopes with "api" failing closed.
func failClosedAPI() []core.Scope {
	s := core.DefaultScopes()
	s[0].FailMode = core.FailClosed
	return s
}

func anonCaller(addr string) core.Caller {
	return core.NetworkCaller(netip.PrefixFrom(netip.MustParseAddr(addr), 32))
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	for _, tc := range []struct {
		name  string
		cfg   core.Config
		wants []string
		id    string
	}{
		{"no store", core.Config{}, []string{"no Store"}, "ratescope.E002"},
		{"typo in scope", core.Config{Store: store, Rates: map[string]string{"apii.anon": "1/min"}}, []string{`rate key "apii.anon" names no known scope`, "api"}, "ratescope.E001"},
		{"typo in kind", core.Config{Store: store, Rates: map[string]string{"api.anonymous": "1/min"}}, []string{`"api.anonymous"`}, "ratescope.E001"},
		{"no kind", core.Config{Store: store, Rates: map[string]string{"api": "1/min"}}, []string{`"api"`}, "ratescope.E001"},
		{"bad rate", core.Config{Store: store, Rates: map[string]string{"api.user": "10/mn"}}, []string{`rate key "api.user"`, `"10/mn"`}, "ratescope.E001"},
		{"every problem", core.Config{Store: store, Rates: map[string]string{"api.user": "x", "foo.anon": "1/s"}}, []string{`"api.user"`, `"foo.anon"`}, "ratescope.E001"},
		{"bad scope name", core.Config{Store: store, Scopes: []core.Scope{{Name: "Bad Name", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}}}}, []string{`"Bad Name"`}, "ratescope.E004"},
		{"scope twice", core.Config{Store: store, Scopes: append(core.DefaultScopes(), core.DefaultScopes()...)}, []string{"defined twice"}, "ratescope.E004"},
		{"scope without rates", core.Config{Store: store, Scopes: []core.Scope{{Name: "x", Anon: []core.Rate{core.PerMinute(1)}}}}, []string{"x.user: no rate given"}, "ratescope.E001"},
		{"ipv6 bits", core.Config{Store: store, IPv6Bits: 129}, []string{"IPv6Bits"}, "ratescope.E003"},
		{"load ratio", core.Config{Store: store, LoadRatio: 1.5}, []string{"LoadRatio"}, "ratescope.E003"},
		{"invalid trusted proxy", core.Config{Store: store, TrustedProxies: core.Networks{netip.Prefix{}}}, []string{"TrustedProxies[0]"}, "ratescope.E005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, tc.cfg.Validate())
			_, err := core.New(tc.cfg)
			require.Error(t, err)
			for _, want := range tc.wants {
				assert.Contains(t, err.Error(), want)
			}
			assert.Contains(t, err.Error(), tc.id+": ", "the error names its id")
			var ce *core.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.id, ce.ID)
		})
	}
}

func TestRatesReplaceStartingValuesKindByKind(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{
		Scopes: append(core.DefaultScopes(), core.Scope{Name: "search", Anon: []core.Rate{core.PerMinute(30)}, User: []core.Rate{core.PerMinute(90)}}),
		Rates:  map[string]string{"api.anon": "3/min,100/day"},
	})
	got := map[string]core.Scope{}
	for _, s := range lim.Config().Scopes {
		got[s.Name] = s
	}
	assert.Equal(t, []core.Rate{core.PerMinute(3), core.PerDay(100)}, got["api"].Anon, "named: replaced")
	assert.Equal(t, core.DefaultScopes()[0].User, got["api"].User, "kind not named: starting values")
	assert.Equal(t, []core.Rate{core.PerMinute(30)}, got["search"].Anon, "scope not named: starting values")
}

func TestAnonymousAndSignedInCountedApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "2/min,100/day", "api.user": "5/min,100/day"}})
	ip := anonCaller("203.0.113.5")
	for range 2 {
		d, err := lim.Allow(ctx, "api", ip)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	d, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "anonymous limit is 2")

	// A user at the same address has the user limits, and a count of
	// its own.
	alice := core.UserCaller("alice")
	for i := range 5 {
		d, err := lim.Allow(ctx, "api", alice)
		require.NoError(t, err)
		require.True(t, d.Allowed, "user request %d", i+1)
		assert.Equal(t, int64(5), d.Limits()[0].Rate.Limit)
	}
	d, err = lim.Allow(ctx, "api", alice)
	require.NoError(t, err)
	assert.False(t, d.Allowed)

	// A user id that looks like an address is still a user.
	d, err = lim.Allow(ctx, "api", core.UserCaller("203.0.113.5"))
	require.NoError(t, err)
	assert.True(t, d.Allowed)
}

func TestRetryAfterSecondsIsHonest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start.Add(1234567 * time.Microsecond))
	lim := newLimiter(t, core.Config{Now: clock.Now, Rates: map[string]string{"api.anon": "3/10s,100/day"}})
	ip := anonCaller("192.0.2.8")
	for round := range 20 {
		var d core.Decision
		for {
			var err error
			d, err = lim.Allow(ctx, "api", ip)
			require.NoError(t, err)
			if !d.Allowed {
				break
			}
			clock.Advance(700 * time.Millisecond)
		}
		secs := d.Problem().RetryAfter
		require.GreaterOrEqual(t, secs, int64(1))
		assert.GreaterOrEqual(t, time.Duration(secs)*time.Second, d.RetryAfter, "rounded up")
		assert.Less(t, time.Duration(secs-1)*time.Second, d.RetryAfter, "by less than a second")
		clock.Advance(time.Duration(secs) * time.Second)
		d, err := lim.Allow(ctx, "api", ip)
		require.NoError(t, err)
		require.True(t, d.Allowed, "round %d: waiting Retry-After (%ds) is enough", round, secs)
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "10/min,100/day"}})
	ip := anonCaller("192.0.2.9")
	d, err := lim.AllowN(ctx, "api", ip, 4)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(6), d.Limits()[0].Remaining)
	assert.Equal(t, int64(96), d.Limits()[1].Remaining)

	require.NoError(t, lim.CheckCost("api", 10))
	assert.NoError(t, lim.CheckCost("api", 11), "above the smallest limit: clamped, not an error")
	assert.Error(t, lim.CheckCost("api", 0))
	assert.Error(t, lim.CheckCost("nope", 1))
	_, err = lim.AllowN(ctx, "api", ip, 0)
	assert.Error(t, err)

	// A cost above the smallest limit is clamped to it: allowed only from
	// an empty window, and then it uses the whole limit.
	other := anonCaller("192.0.2.10")
	d, err = lim.AllowN(ctx, "api", other, 11)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(10), d.Cost)
	assert.Equal(t, int64(0), d.Limits()[0].Remaining)
	d, err = lim.AllowN(ctx, "api", ip, 11)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "4 of 10 used: a clamped cost of 10 does not fit")
	d, err = lim.Allow(ctx, "nope", ip)
	assert.ErrorContains(t, err, `unknown scope "nope"`)
	assert.False(t, d.Allowed)
}

func TestLoadWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "10/min,1000/day"}, LoadRatio: 0.5})
	ip := anonCaller("192.0.2.10")
	var loads []bool
	for range 7 {
		d, err := lim.Allow(ctx, "api", ip)
		require.NoError(t, err)
		loads = append(loads, d.Load)
	}
	assert.Equal(t, []bool{false, false, false, false, false, true, true}, loads, "warned once more than half is used")
}

// failingStore fails every call, as an unreachable store does.
type failingStore struct{}

func (failingStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(errors.New("connection refused")).Bind("", 0, nil)
}

func TestStoreFailureFailsOpen(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	clock := storetest.NewClock(storetest.Start)
	lim := newLimiter(t, core.Config{
		Store:  failingStore{},
		Now:    clock.Now,
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Rates:  map[string]string{"api.anon": "1/min,1/day"},
	})
	for range 50 {
		d, err := lim.Allow(context.Background(), "api", anonCaller("192.0.2.11"))
		require.NoError(t, err, "a store failure is not the caller's error")
		assert.True(t, d.Allowed, "fail open")
		assert.False(t, d.Checked)
		assert.ErrorContains(t, d.StoreErr, "connection refused")
		h := http.Header{}
		d.SetHeaders(h)
		assert.Empty(t, h, "nothing counted, nothing to tell")
	}
	assert.Equal(t, int64(50), lim.StoreFailures())
	assert.Equal(t, 1, strings.Count(log.String(), "\n"), "one log line per interval, not per request")
	assert.Contains(t, log.String(), "connection refused")

	clock.Advance(10 * time.Second)
	_, err := lim.Allow(context.Background(), "api", anonCaller("192.0.2.11"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(log.String(), "\n"))
	assert.Contains(t, log.String(), "suppressed=49")
}

func TestSetHeaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start)
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "2/min,100/day"}, LegacyHeaders: true, Now: clock.Now})
	ip := anonCaller("192.0.2.12")
	d, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	h := http.Header{}
	d.SetHeaders(h)
	assert.Equal(t, `"api.anon.min";q=2;w=60, "api.anon.day";q=100;w=86400`, h.Get("RateLimit-Policy"))
	assert.Equal(t, `"api.anon.min";r=1, "api.anon.day";r=99`, h.Get("RateLimit"), "no t for a limit with room")
	assert.Empty(t, h.Get("Retry-After"))
	assert.Equal(t, "2", h.Get("X-RateLimit-Limit"))
	assert.Equal(t, "1", h.Get("X-RateLimit-Remaining"))
	assert.Equal(t, "60", h.Get("X-RateLimit-Reset"))

	_, err = lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	d, err = lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	h = http.Header{}
	d.SetHeaders(h)
	assert.Equal(t, "60", h.Get("Retry-After"))
	assert.Equal(t, `"api.anon.min";r=0;t=60, "api.anon.day";r=98`, h.Get("RateLimit"), "t for the limit that refused alone")
	assert.Equal(t, core.DenyBody{Detail: "Request was throttled. Expected available in 60 seconds.", RetryAfter: 60}, d.DenyBody())

	// Later, t counts down to when the limit that refused has room, and
	// Retry-After with it.
	clock.Advance(15 * time.Second)
	d, err = lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	h = http.Header{}
	d.SetHeaders(h)
	assert.Equal(t, "45", h.Get("Retry-After"))
	assert.Equal(t, `"api.anon.min";r=0;t=45, "api.anon.day";r=98`, h.Get("RateLimit"))

	// A header value set by SetHeaders can be changed without touching
	// another field's value.
	h.Add("RateLimit", "x")
	assert.Equal(t, []string{"45"}, h.Values("Retry-After"))
}

func TestLimiterConfigDefaults(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{})
	cfg := lim.Config()
	assert.Equal(t, 64, cfg.IPv6Bits)
	assert.Equal(t, 0.8, cfg.LoadRatio)
	assert.Equal(t, 10*time.Second, cfg.ErrorLogInterval)
	assert.Nil(t, cfg.NumProxies)
	assert.Equal(t, core.DefaultScopes(), cfg.Scopes)
	assert.True(t, lim.HasScope("api"))
	assert.False(t, lim.HasScope("apix"))
}

func TestGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "2/min,100/day"}})
	_, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "nope", Cost: 1})
	assert.ErrorContains(t, err, "unknown scope")
	_, err = core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: -1})
	assert.ErrorContains(t, err, "cost -1")

	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	caller := lim.Caller(r, core.Caller{})
	h := http.Header{}
	d := g.Decide(ctx, caller, h)
	assert.True(t, d.Allowed)
	assert.True(t, d.Checked)
	first := h.Get("RateLimit")
	assert.Equal(t, `"api.anon.min";r=1, "api.anon.day";r=99`, first)

	// Writing the same decision again leaves the first header untouched.
	h2 := http.Header{}
	d.SetHeaders(h2)
	assert.Equal(t, first, h2.Get("RateLimit"))
	h3 := http.Header{}
	g.Decide(ctx, caller, h3)
	g.Decide(ctx, caller, h3)
	assert.Equal(t, `"api.anon.min";r=1, "api.anon.day";r=99`, first)
	assert.Equal(t, "60", h3.Get("Retry-After"))

	// The defaults are read once, by NewGuard: the zero scope is "api",
	// the zero cost 1; a cost below 1 is an error, reported by Validate
	// alike.
	zero, err := core.NewGuard(core.GuardConfig{Limiter: lim})
	require.NoError(t, err)
	assert.Equal(t, int64(1), zero.Decide(ctx, core.UserCaller("zero"), http.Header{}).Cost)
	bad := core.GuardConfig{Limiter: lim, Cost: -1}
	_, err = core.NewGuard(bad)
	assert.ErrorContains(t, err, "cost -1")
	assert.Equal(t, err, bad.Validate())
	assert.ErrorContains(t, core.GuardConfig{}.Validate(), "GuardConfig.Limiter is nil")

	ex := g.Exempt(context.Background(), core.UserCaller("root"))
	assert.True(t, ex.Allowed)
	assert.False(t, ex.Checked)
	assert.Empty(t, ex.Limits())
}

func TestConfigIsACopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "1/min,10/day"}})
	cfg := lim.Config()
	cfg.Scopes[0].Anon[0] = core.PerMinute(1000)
	cfg.Rates["api.anon"] = "1000/min"
	ip := anonCaller("192.0.2.20")
	d, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, err = lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the limiter still enforces 1/min")
	assert.Equal(t, core.PerMinute(1), lim.Config().Scopes[0].Anon[0])
}

// hungUpStore fails as a store does when the request's context ends first.
type hungUpStore struct{}

func (hungUpStore) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	return storecall.Func(func(ctx context.Context, _ storecall.Call) (core.Result, error) {
		<-ctx.Done()
		return core.Result{}, fmt.Errorf("store: %w", ctx.Err())
	}).Bind(scope, kind, limits)
}

func TestClientHangsUp(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	lim := newLimiter(t, core.Config{Store: hungUpStore{}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := lim.Allow(ctx, "api", anonCaller("192.0.2.13"))
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.False(t, d.Checked)
	assert.ErrorIs(t, d.StoreErr, context.Canceled)
	assert.Zero(t, lim.StoreFailures(), "a client that hangs up is no store failure")
	assert.Empty(t, log.String())

	// The same error with the request's context still live is one.
	lim = newLimiter(t, core.Config{Store: canceledStore{}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	d, err = lim.Allow(context.Background(), "api", anonCaller("192.0.2.13"))
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(1), lim.StoreFailures())
	assert.Contains(t, log.String(), "store failed")
}

// canceledStore returns a context error of its own.
type canceledStore struct{}

func (canceledStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(context.Canceled).Bind("", 0, nil)
}

// bindSpy is a store that records what it was bound to and counts the
// requests each counter it gave decided.
type bindSpy struct {
	*memstore.Store
	asked []string
	took  map[string]int
}

func (s *bindSpy) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	name := scope + "." + kind.String()
	s.asked = append(s.asked, name)
	c, err := s.Store.Bind(scope, kind, limits)
	if err != nil {
		return nil, err
	}
	return storecall.Func(func(ctx context.Context, call storecall.Call) (core.Result, error) {
		s.took[name]++
		return c.Take(ctx, call.Key, call.Cost, call.Now)
	}).Bind(scope, kind, limits)
}

// A Limiter binds its store to each scope and kind of caller once, when it
// is built, and decides their requests on the counters it was given.
func TestBindOnce(t *testing.T) {
	spy := &bindSpy{Store: memstore.New(memstore.Config{SweepInterval: -1}), took: map[string]int{}}
	t.Cleanup(func() { _ = spy.Close() })
	lim := newLimiter(t, core.Config{Store: spy, Rates: map[string]string{"api.anon": "2/min"}})
	assert.Subset(t, spy.asked, []string{"api.anon", "api.user"})
	asked := len(spy.asked)
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	for _, want := range []bool{true, true, false} {
		d, err := lim.Allow(ctx, "api", ip)
		require.NoError(t, err)
		assert.Equal(t, want, d.Allowed)
	}
	_, err := lim.Allow(ctx, "api", core.UserCaller("ann"))
	require.NoError(t, err)
	assert.Equal(t, 3, spy.took["api.anon"])
	assert.Equal(t, 1, spy.took["api.user"])
	assert.Len(t, spy.asked, asked, "bound once per scope and kind, not per request")
}

// TestCheckedByOutcome pins Decision.Checked to one meaning with every
// outcome: the store checked the request against the limits. A refused
// request is checked but not counted (the caller's room stays as it was);
// before issue 18 the field was named Counted and was true for it.
func TestCheckedByOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	who := anonCaller("192.0.2.44")
	for _, tc := range []struct {
		name    string
		cfg     core.Config
		calls   int // the decision of the last call is checked
		outcome core.Outcome
		checked bool
	}{
		{name: "allowed", calls: 1, outcome: core.OutcomeAllowed, checked: true},
		{name: "denied", calls: 3, outcome: core.OutcomeDenied, checked: true},
		{name: "shadow", cfg: core.Config{Scopes: shadowAPI(), Logger: slog.New(slog.DiscardHandler)}, calls: 3, outcome: core.OutcomeShadow, checked: true},
		{name: "failed open", cfg: core.Config{Store: failingStore{}, Logger: slog.New(slog.DiscardHandler)}, calls: 1, outcome: core.OutcomeFailedOpen, checked: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Rates = map[string]string{"api.anon": "2/min"}
			lim := newLimiter(t, cfg)
			var d core.Decision
			for range tc.calls {
				var err error
				d, err = lim.Allow(ctx, "api", who)
				require.NoError(t, err)
			}
			assert.Equal(t, tc.outcome, d.Outcome)
			assert.Equal(t, tc.checked, d.Checked)
			if tc.checked {
				assert.Len(t, d.Limits(), 1, "a checked decision says where the caller stands")
			} else {
				assert.Empty(t, d.Limits())
			}
		})
	}
	g, err := core.NewGuard(core.GuardConfig{Limiter: newLimiter(t, core.Config{}), Scope: "api", Cost: 1})
	require.NoError(t, err)
	var d core.Decision
	g.ExemptInto(ctx, &d, who, "")
	assert.Equal(t, core.OutcomeExempt, d.Outcome)
	assert.False(t, d.Checked)
}

// TestUserErrorsNameTheFix checks that each error a user can cause names
// the bad value, what is allowed, and the fix. Before issue 18 an unknown
// scope failed with `unknown scope "export"` alone.
func TestUserErrorsNameTheFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{
		Scopes: append(core.DefaultScopes(), core.Scope{Name: "search", Anon: []core.Rate{core.PerMinute(5)}, User: []core.Rate{core.PerMinute(5)}}),
	})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	_, allowErr := lim.Allow(ctx, "export", anonCaller("192.0.2.1"))
	_, guardErr := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "export", Cost: 1})
	_, routeErr := g.WithRouteCosts(map[string]int64{"/api/export": 0})
	_, rateErr := core.ParseRates("60/min,100/1m")
	for _, tc := range []struct {
		name  string
		err   error
		wants []string
	}{
		{name: "unknown scope", err: allowErr, wants: []string{`unknown scope "export"`, "scopes are api, search", `add a core.Scope named "export" to core.Config.Scopes`}},
		{name: "unknown scope of a guard", err: guardErr, wants: []string{`unknown scope "export"`, "scopes are api, search", "core.Config.Scopes"}},
		{name: "route cost", err: routeErr, wants: []string{`cost 0 of route "/api/export"`, "want 1 or more", "leave the route out of RouteCosts"}},
		{name: "two rates over one period", err: rateErr, wants: []string{"60/min and 100/min", "keep one rate per period"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, tc.err)
			for _, w := range tc.wants {
				assert.Contains(t, tc.err.Error(), w)
			}
		})
	}
}

// TestShadowHeaderShowsUnitsLeft checks what the shadow docs say of the
// RateLimit header: a request refused in shadow mode shows the units left,
// which is not 0 when the request costs more than is left (the docs said
// r=0 before issue 18).
func TestShadowHeaderShowsUnitsLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Scopes: shadowAPI(), Logger: slog.New(slog.DiscardHandler), Rates: map[string]string{"api.anon": "10/min"}})
	who := anonCaller("192.0.2.45")
	d, err := lim.AllowN(ctx, "api", who, 7)
	require.NoError(t, err)
	require.Equal(t, core.OutcomeAllowed, d.Outcome)
	d, err = lim.AllowN(ctx, "api", who, 5)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeShadow, d.Outcome)
	h := http.Header{}
	d.SetHeaders(h)
	assert.Equal(t, `"api.anon.min";r=3;t=60`, h.Get("RateLimit"), "3 units left, not 0")
	assert.Empty(t, h.Get("Retry-After"))
	d, err = lim.AllowN(ctx, "api", who, 3)
	require.NoError(t, err)
	require.Equal(t, core.OutcomeAllowed, d.Outcome)
	d, err = lim.Allow(ctx, "api", who)
	require.NoError(t, err)
	h = http.Header{}
	d.SetHeaders(h)
	assert.Equal(t, `"api.anon.min";r=0;t=60`, h.Get("RateLimit"), "0 once the limit is used up")
}
