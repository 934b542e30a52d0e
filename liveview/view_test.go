package liveview_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/liveview"
)

// setup is a limiter observed by a view, on one fake clock.
type setup struct {
	clock *storetest.Clock
	view  *liveview.View
	lim   *core.Limiter
	req   *http.Request // for Limiter.Caller
}

// newSetup builds a view with cfg (its clock set) observing a limiter
// (newLimiter) with rates.
func newSetup(t *testing.T, cfg liveview.Config, rates map[string]string) setup {
	t.Helper()
	clock := storetest.NewClock(time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC))
	cfg.Now = clock.Now
	view, err := liveview.New(cfg)
	require.NoError(t, err)
	lim := newLimiter(t, clock, rates, view.Observe)
	return setup{clock: clock, view: view, lim: lim, req: httptest.NewRequest(http.MethodGet, "/", nil)}
}

// newLimiter returns a limiter on a fresh memory store and clock, with
// the scopes api and search, rates, callers that connect directly, and
// the hook observe.
func newLimiter(t *testing.T, clock *storetest.Clock, rates map[string]string, observe func(context.Context, core.Event)) *core.Limiter {
	t.Helper()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	scopes := append(core.DefaultScopes(), core.Scope{Name: "search", Anon: []core.Rate{core.PerMinute(60)}, User: []core.Rate{core.PerMinute(600)}})
	lim, err := core.New(core.Config{Store: store, Scopes: scopes, Rates: rates, NumProxies: new(0), Now: clock.Now, Observe: observe})
	require.NoError(t, err)
	return lim
}

// user returns the caller the limiter counts for a signed-in user.
func (s setup) user(id string) core.Caller {
	return s.lim.Caller(s.req, core.UserCaller(id))
}

// addr returns the caller the limiter counts for an address.
func (s setup) addr(a string) core.Caller {
	return s.lim.AddrCaller(netip.MustParseAddr(a))
}

// allow asks for one request of c in scope n times.
func (s setup) allow(t *testing.T, scope string, c core.Caller, n int) {
	t.Helper()
	for range n {
		_, err := s.lim.Allow(context.Background(), scope, c)
		require.NoError(t, err)
	}
}

// series returns the snapshot's series of scope, kind and outcome.
func series(t *testing.T, snap liveview.Snapshot, scope, kind, outcome string) liveview.Series {
	t.Helper()
	for _, s := range snap.Series {
		if s.Scope == scope && s.Kind == kind && s.Outcome == outcome {
			return s
		}
	}
	require.Failf(t, "no series", "%s %s %s in %v", scope, kind, outcome, snap.Series)
	return liveview.Series{}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  liveview.Config
		want []string
	}{
		{name: "zero", cfg: liveview.Config{}},
		{name: "defaults", cfg: liveview.DefaultConfig()},
		{name: "negative callers", cfg: liveview.Config{Callers: -1}, want: []string{"Config.Callers -1"}},
		{name: "too many callers", cfg: liveview.Config{Callers: 1_000_001}, want: []string{"Config.Callers 1000001"}},
		{name: "all wrong", cfg: liveview.Config{Callers: -1, Listed: -2, Refresh: time.Millisecond}, want: []string{"Config.Callers -1", "Config.Listed -2", "Config.Refresh 1ms"}},
		{name: "negative refresh", cfg: liveview.Config{Refresh: -time.Second}, want: []string{"Config.Refresh -1s"}},
		{name: "longest refresh", cfg: liveview.Config{Refresh: time.Hour}},
		{name: "refresh too long", cfg: liveview.Config{Refresh: 25 * 24 * time.Hour}, want: []string{"Config.Refresh 600h0m0s: want 100ms to 1h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			_, newErr := liveview.New(tt.cfg)
			if tt.want == nil {
				assert.NoError(t, err)
				assert.NoError(t, newErr)
				return
			}
			require.Error(t, err)
			assert.Equal(t, err, newErr)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), "liveview: "+w)
			}
		})
	}
}

func TestSeriesPerSecond(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "3/min", "api.user": "100/min"})
	alice, ip := s.user("alice"), s.addr("192.0.2.1")
	s.allow(t, "api", ip, 5)    // 3 allowed, 2 refused
	s.allow(t, "api", alice, 2) // 2 allowed
	s.clock.Advance(time.Second)
	s.allow(t, "api", ip, 1) // refused
	s.allow(t, "api", alice, 1)

	snap := s.view.Snapshot()
	assert.Equal(t, s.clock.Now(), snap.Now)
	require.Len(t, snap.Series, 14, "7 outcomes for each kind seen")
	anonAllowed := series(t, snap, "api", "anon", "allowed")
	require.Len(t, anonAllowed.PerSecond, liveview.Seconds)
	last := liveview.Seconds - 1
	assert.Equal(t, []int64{3, 0}, anonAllowed.PerSecond[last-1:])
	assert.Equal(t, int64(3), anonAllowed.Total)
	assert.Equal(t, []int64{2, 1}, series(t, snap, "api", "anon", "denied").PerSecond[last-1:])
	assert.Equal(t, []int64{2, 1}, series(t, snap, "api", "user", "allowed").PerSecond[last-1:])
	assert.Equal(t, int64(0), series(t, snap, "api", "user", "denied").Total)

	// Ten minutes on, the counts have moved back; after fifteen they are gone,
	// though their slots are used again.
	s.clock.Advance(10 * time.Minute)
	snap = s.view.Snapshot()
	assert.Equal(t, int64(2), series(t, snap, "api", "anon", "denied").PerSecond[last-601])
	s.clock.Advance(5 * time.Minute)
	s.allow(t, "api", alice, 1)
	snap = s.view.Snapshot()
	assert.Equal(t, int64(1), series(t, snap, "api", "user", "allowed").Total, "only the new second")
	assert.Equal(t, int64(0), series(t, snap, "api", "anon", "denied").Total)
}

func TestTopRefusedCallers(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{Listed: 2}, map[string]string{"api.anon": "1/min", "api.user": "1/min", "search.user": "1/min"})
	start := s.clock.Now()
	crawler, bob := s.addr("198.51.100.9"), s.user("bob")
	s.allow(t, "api", crawler, 1+5)
	s.clock.Advance(2 * time.Second)
	s.allow(t, "api", crawler, 2)
	s.allow(t, "api", bob, 1+3)
	s.allow(t, "search", bob, 1+1)
	s.allow(t, "api", s.user("carol"), 1) // never refused

	snap := s.view.Snapshot()
	assert.Equal(t, int64(11), snap.Refusals)
	assert.Equal(t, 1000, snap.Callers)
	assert.Equal(t, int64(0), snap.ErrorBound)
	assert.False(t, snap.ResetAllowed)
	assert.Equal(t, []liveview.Refused{
		{Scope: "api", Caller: "198.51.100.9", Ref: refOf(t, crawler), Kind: "anon", Refusals: 7, First: start, Last: start.Add(2 * time.Second), Limit: "1/min", Until: start.Add(time.Minute)},
		{Scope: "api", Caller: "bob", Ref: refOf(t, bob), Kind: "user", Refusals: 3, First: start.Add(2 * time.Second), Last: start.Add(2 * time.Second), Limit: "1/min", Until: start.Add(2*time.Second + time.Minute)},
	}, snap.Refused, "the two most refused, of three; each with the limit that refused it last, until the end of the caller's window")

	// A caller last refused 15 minutes ago is no longer listed.
	s.clock.Advance(15 * time.Minute)
	s.allow(t, "search", bob, 2) // 1 allowed in a new minute, 1 refused
	snap = s.view.Snapshot()
	assert.Equal(t, []liveview.Refused{
		{Scope: "search", Caller: "bob", Ref: refOf(t, bob), Kind: "user", Refusals: 2, First: start.Add(2 * time.Second), Last: s.clock.Now(), Limit: "1/min", Until: s.clock.Now().Add(time.Minute)},
	}, snap.Refused)
}

// TestRefusedBy: a caller's row names the limit that refused its last
// refusal and until when it refuses, on the page and in the JSON, in the
// view clock's zone (UTC).
func TestRefusedBy(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "2/min,3/hour"})
	start := s.clock.Now()
	ip := s.addr("203.0.113.7")
	s.allow(t, "api", ip, 2+1) // the third refused by the minute's limit
	r := s.view.Snapshot().Refused
	require.Len(t, r, 1)
	assert.Equal(t, "2/min", r[0].Limit)
	assert.Equal(t, start.Add(time.Minute), r[0].Until)

	// A minute on, one more is allowed and the next is refused by the
	// hour's limit, which has no room left: the row names the last, until
	// the time its decision says.
	s.clock.Advance(time.Minute)
	s.allow(t, "api", ip, 1)
	d, err := s.lim.Allow(context.Background(), "api", ip)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	l, ok := d.Refusing()
	require.True(t, ok)
	require.Equal(t, core.Rate{Limit: 3, Period: time.Hour}, l.Rate)
	until := s.clock.Now().Add(l.RetryAfter)
	r = s.view.Snapshot().Refused
	require.Len(t, r, 1)
	assert.Equal(t, int64(2), r[0].Refusals)
	assert.Equal(t, "3/hour", r[0].Limit)
	assert.Equal(t, until, r[0].Until)
	assert.Equal(t, time.UTC, r[0].Until.Location())

	page := get(t, s.view, "/").Body.String()
	assert.Contains(t, page, "<th>Refused by</th><th>Until</th>")
	assert.Contains(t, page, "<td>3/hour</td><td>"+until.Format("2006-01-02 15:04:05")+" UTC</td>")
	body := get(t, s.view, "/?format=json").Body.String()
	assert.Contains(t, body, `"limit":"3/hour","until":"`+until.Format(time.RFC3339)+`"`)
}

func TestJSON(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "1/min"})
	ip := s.addr("203.0.113.7")
	s.allow(t, "api", ip, 3)
	w := get(t, s.view, "/debug/limits?format=json") // 200
	assert.Equal(t, "application/json; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	var got liveview.Snapshot
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
	want := s.view.Snapshot()
	assert.Equal(t, want.Series, got.Series)
	assert.Equal(t, want.Refused[0].Caller, got.Refused[0].Caller)
	assert.True(t, want.Refused[0].Last.Equal(got.Refused[0].Last))
	assert.NotContains(t, w.Body.String(), `"reset":`, "no reset yet: left out")
	assert.Contains(t, w.Body.String(), `"refused":[{"scope":"api","caller":"203.0.113.7","ref":"`+refOf(t, ip)+`","kind":"anon","refusals":2,"error":0,`)
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, nil)
	tests := []struct {
		name   string
		method string
		target string
		status int
	}{
		{name: "unknown format", method: http.MethodGet, target: "/?format=xml", status: http.StatusBadRequest},
		{name: "delete", method: http.MethodDelete, target: "/", status: http.StatusMethodNotAllowed},
		{name: "reset not allowed", method: http.MethodPost, target: "/", status: http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			s.view.ServeHTTP(w, httptest.NewRequest(tt.method, tt.target, nil))
			assert.Equal(t, tt.status, w.Code)
			var body struct{ Error string }
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			assert.NotEmpty(t, body.Error)
		})
	}
}

// TestPeriods: the callers listed are those of the current period of 15
// minutes and the previous one, merged; older refusals are forgotten.
func TestPeriods(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{Callers: 2, Listed: 10}, map[string]string{"api.anon": "1/hour"})
	start := s.clock.Now()
	a, b, c, d := s.addr("192.0.2.1"), s.addr("192.0.2.2"), s.addr("192.0.2.3"), s.addr("192.0.2.4")
	s.allow(t, "api", a, 1+6)
	s.allow(t, "api", b, 1+2)
	snap := s.view.Snapshot()
	assert.Equal(t, int64(8), snap.Refusals)
	assert.Equal(t, int64(4), snap.ErrorBound)

	// The next period: a twice more, then c and d, which fill the
	// summary (d takes c's place).
	s.clock.Advance(16 * time.Minute)
	s.allow(t, "api", a, 2) // the hour has not passed: refused
	s.allow(t, "api", c, 1+1)
	s.allow(t, "api", d, 1+1)
	snap = s.view.Snapshot()
	assert.Equal(t, int64(12), snap.Refusals, "both periods")
	assert.Equal(t, int64(6), snap.ErrorBound)
	truth := map[string]int64{"192.0.2.1": 8, "192.0.2.2": 2, "192.0.2.3": 1, "192.0.2.4": 1}
	for _, r := range snap.Refused {
		assert.LessOrEqual(t, r.Error, snap.ErrorBound, r.Caller)
		assert.GreaterOrEqual(t, r.Refusals, truth[r.Caller], r.Caller)
		assert.LessOrEqual(t, r.Refusals-r.Error, truth[r.Caller], r.Caller)
	}
	// a, kept in both periods, has its counts added up, exactly; d, kept
	// in the second only, gets the first's smallest count as count and
	// error; b, last refused more than 15 minutes ago, is not listed; c
	// was not kept.
	assert.Equal(t, []liveview.Refused{
		{Scope: "api", Caller: "192.0.2.1", Ref: refOf(t, a), Kind: "anon", Refusals: 8, First: start, Last: s.clock.Now(), Limit: "1/hour", Until: start.Add(time.Hour)},
		{Scope: "api", Caller: "192.0.2.4", Ref: refOf(t, d), Kind: "anon", Refusals: 2 + 2, Error: 1 + 2, First: s.clock.Now(), Last: s.clock.Now(), Limit: "1/hour", Until: s.clock.Now().Add(time.Hour)},
	}, snap.Refused)

	// A period on, the first is forgotten.
	s.clock.Advance(15 * time.Minute)
	s.allow(t, "api", b, 2)
	snap = s.view.Snapshot()
	assert.Equal(t, int64(4+2), snap.Refusals, "the second and third periods")
	require.NotEmpty(t, snap.Refused)
	assert.Equal(t, liveview.Refused{Scope: "api", Caller: "192.0.2.2", Ref: refOf(t, b), Kind: "anon", Refusals: 2 + 2, Error: 2, First: s.clock.Now(), Last: s.clock.Now(), Limit: "1/hour", Until: start.Add(time.Hour)}, snap.Refused[0],
		"b is not in the second period's full summary: it gets its smallest count, 2, as count and error")

	// Thirty minutes without a refusal: nothing is left.
	s.clock.Advance(31 * time.Minute)
	snap = s.view.Snapshot()
	assert.Zero(t, snap.Refusals)
	assert.Empty(t, snap.Refused)
}

// TestResetMarkedWithExemptNetworks: a limiter with exempt networks marks
// the callers it builds from requests with what it found of their address;
// a reset made outside the view (lim.Reset of UserCaller or AddrCaller, as
// the portal's admin route does) names the same counted caller without that
// mark, and the view marks it on the caller's row all the same.
func TestResetMarkedWithExemptNetworks(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	view, err := liveview.New(liveview.Config{Now: clock.Now})
	require.NoError(t, err)
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	lim, err := core.New(core.Config{
		Store: store, Rates: map[string]string{"api.anon": "1/min", "api.user": "1/min"}, NumProxies: new(0),
		ExemptNetworks: core.Networks{netip.MustParsePrefix("198.51.100.0/24")}, Now: clock.Now, Observe: view.Observe,
	})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	ctx := context.Background()
	for _, c := range []core.Caller{lim.Caller(r, core.UserCaller("bob")), lim.Caller(r, core.Caller{})} {
		for range 2 {
			_, err := lim.Allow(ctx, "api", c)
			require.NoError(t, err)
		}
	}
	clock.Advance(time.Second)
	require.NoError(t, lim.Reset(ctx, "api", core.UserCaller("bob")))
	require.NoError(t, lim.Reset(ctx, "api", lim.AddrCaller(netip.MustParseAddr("192.0.2.1"))))
	snap := view.Snapshot()
	require.Len(t, snap.Refused, 2)
	for _, row := range snap.Refused {
		assert.Equal(t, clock.Now(), row.Reset, row.Caller)
	}
}

// TestLocalOutcome checks that decisions made in the process's memory
// (core.OutcomeLocal: the store answered late, or failed in a scope that
// fails local) have a series and a line of their own beside failed open.
func TestLocalOutcome(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "3/min"})
	ip := s.addr("192.0.2.1")
	for range 2 {
		s.view.Observe(context.Background(), core.Event{Scope: "api", Caller: ip, Cost: 1, Outcome: core.OutcomeLocal})
	}
	snap := s.view.Snapshot()
	assert.Equal(t, int64(2), series(t, snap, "api", "anon", "local").Total)
	assert.Equal(t, int64(0), series(t, snap, "api", "anon", "failed_open").Total)
	page := get(t, s.view, "/").Body.String()
	assert.Contains(t, page, "decided in memory")
}
