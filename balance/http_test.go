package balance_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// The JSON-RPC route of these tests: POST /rpc, the user in X-User, the
// cost in X-Cost (balance.CostReference without it), an API key in
// X-Api-Key, skipped with X-Skip. Its handler is an application's, written
// as the package's example writes it: the suite the adapters' balance
// middleware passed, on plain net/http.
const (
	costHeader = "X-Cost"
	userHeader = "X-User"
)

// rpcOptions are what a test asks of the route.
type rpcOptions struct {
	// exempt, when not nil, says which callers are administrators.
	exempt func(core.Caller) bool
	// store, when not nil, keeps the balances (and the limiter's counts).
	store interface {
		core.Store
		balance.Store
	}
	// tweak, when not nil, changes the limiter's config.
	tweak func(*core.Config)
	// failMode is balance.Config.FailMode.
	failMode core.FailMode
}

// rpcApp is the route and what its handler saw.
type rpcApp struct {
	t     *testing.T
	h     http.Handler
	guard *balance.Guard
	logs  *bytes.Buffer

	mu     sync.Mutex
	seen   []*balance.Decision // nil for a skipped request
	events []core.Event        // what the limiter's Observe saw
}

func newRPCApp(t *testing.T, o rpcOptions) *rpcApp {
	t.Helper()
	a := &rpcApp{t: t, logs: &bytes.Buffer{}}
	store := o.store
	if store == nil {
		ms := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = ms.Close() })
		store = ms
	}
	cfg := core.Config{
		Store:      store,
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now,
		Logger:     slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	cfg.Observe = func(_ context.Context, e core.Event) {
		a.mu.Lock()
		a.events = append(a.events, e)
		a.mu.Unlock()
	}
	if o.tweak != nil {
		o.tweak(&cfg)
	}
	lim, err := core.New(cfg)
	require.NoError(t, err)
	a.guard, err = balance.New(balance.Config{Limiter: lim, Store: store, Scope: "rpc", FailMode: o.failMode})
	require.NoError(t, err)
	a.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Skip") != "" {
			a.record(nil)
			http.Error(w, "no decision", http.StatusInternalServerError)
			return
		}
		user := core.UserCaller(r.Header.Get(userHeader))
		if key := r.Header.Get("X-Api-Key"); key != "" {
			user = core.KeyCaller(key)
		}
		caller := lim.Caller(r, user)
		var d *balance.Decision
		if o.exempt != nil && o.exempt(caller) {
			d = a.guard.Exempt(r.Context(), caller)
		} else {
			cost := balance.CostReference
			if c := r.Header.Get(costHeader); c != "" {
				cost, _ = strconv.ParseInt(c, 10, 64)
			}
			d = a.guard.Charge(r.Context(), caller, cost)
		}
		d.SetHeaders(w.Header())
		if !d.Allowed {
			balance.WriteOverloaded(w)
			return
		}
		a.record(d)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok")
	})
	return a
}

func (a *rpcApp) record(d *balance.Decision) {
	a.mu.Lock()
	a.seen = append(a.seen, d)
	a.mu.Unlock()
}

func (a *rpcApp) last() *balance.Decision {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.NotEmpty(a.t, a.seen, "the handler never ran")
	return a.seen[len(a.seen)-1]
}

// lastEvent returns the event of the last decision.
func (a *rpcApp) lastEvent() core.Event {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.NotEmpty(a.t, a.events, "nothing was observed")
	return a.events[len(a.events)-1]
}

func (a *rpcApp) served() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

// post sends a request of who (anonymous if "") of the given cost (the
// default one if below 0), from 192.0.2.1.
func (a *rpcApp) post(who string, cost int64) *httptest.ResponseRecorder {
	return a.postWith(who, cost, nil)
}

// postWith is post with more request headers.
func (a *rpcApp) postWith(who string, cost int64, h http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(`{"method":"ping"}`))
	req.RemoteAddr = "192.0.2.1:1234"
	for k, v := range h {
		req.Header[k] = v
	}
	if who != "" {
		req.Header.Set(userHeader, who)
	}
	if cost >= 0 {
		req.Header.Set(costHeader, strconv.FormatInt(cost, 10))
	}
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, req)
	return w
}

// TestJSONRPC runs, on a JSON-RPC route of plain net/http, what the
// adapters' balance middleware was tested for: warned with the header,
// then dropped with 503 "Server is overloaded" before the handler, the
// drop logged once per drop; the default cost; exemption; callers by key;
// skipped requests; failing open and closed; the warning field under each
// header policy (core.Config.Headers).
func TestJSONRPC(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"WarnedThenDroppedWith503", testRPCDrop},
		{"DefaultCostIsReference", testRPCDefaultCost},
		{"ExemptNeverCharged", testRPCExempt},
		{"KeyAndSkipper", testRPCKeyAndSkipper},
		{"StoreFailureFailsOpen", testRPCFailOpen},
		{"ExemptNetworksNeverCharged", testRPCExemptNetworks},
		{"FailClosedAnswers503WithRetryAfter", testRPCFailClosed},
		{"HeaderModes", testRPCHeaderModes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

func testRPCDrop(t *testing.T) {
	a := newRPCApp(t, rpcOptions{})
	var w *httptest.ResponseRecorder
	warned := 0
	for range 1000 {
		w = a.post("alice", 3000)
		if w.Code != http.StatusOK {
			break
		}
		d := a.last()
		assert.Equal(t, d.Load, w.Header().Get("Ratescope-Warning") == "load", "the header says what the decision says")
		if d.Load {
			warned++
		}
	}
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "Server is overloaded", w.Body.String())
	mediaType, _, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
	require.NoError(t, err)
	assert.Equal(t, "text/plain", mediaType)
	assert.Positive(t, warned, "warned before the drop")
	served := a.served()
	assert.Equal(t, http.StatusServiceUnavailable, a.post("alice", 20).Code, "a dropped caller stays out")
	assert.Equal(t, served, a.served(), "the handler never runs for a dropped caller")
	assert.Equal(t, 1, strings.Count(a.logs.String(), "Consumer entry alice dropped with balance"), "one line per drop, not per refusal:\n%s", a.logs)

	w = a.post("bob", 20)
	assert.Equal(t, http.StatusOK, w.Code, "another caller has its own balance")
	assert.Empty(t, w.Header().Get("Ratescope-Warning"))
}

func testRPCDefaultCost(t *testing.T) {
	a := newRPCApp(t, rpcOptions{})
	for range 8 {
		require.Equal(t, http.StatusOK, a.post("", -1).Code)
	}
	d := a.last()
	assert.Equal(t, int64(8*20/32), d.Balance)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome)
	e := a.lastEvent()
	assert.Equal(t, int64(20), e.Cost)
	assert.Equal(t, "192.0.2.1", e.Caller.String())
	assert.Equal(t, "rpc", e.Scope)
}

func testRPCExempt(t *testing.T) {
	a := newRPCApp(t, rpcOptions{exempt: func(c core.Caller) bool { return c.User() == "root" }})
	for range 300 {
		w := a.post("root", 3000)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Empty(t, w.Header().Get("Ratescope-Warning"))
		d := a.last()
		assert.Equal(t, core.OutcomeExempt, d.Outcome)
		assert.Zero(t, d.Balance)
		assert.False(t, d.Load)
	}
	assert.Empty(t, a.logs.String())
	a.post("alice", 3000)
	assert.Equal(t, core.OutcomeAllowed, a.last().Outcome)
}

func testRPCKeyAndSkipper(t *testing.T) {
	a := newRPCApp(t, rpcOptions{})
	require.Equal(t, http.StatusOK, a.postWith("alice", -1, http.Header{"X-Api-Key": {"k1"}}).Code)
	assert.Equal(t, core.KeyCaller("k1"), a.lastEvent().Caller, "a key wins over the user, as for windows")
	require.Equal(t, http.StatusOK, a.post("alice", -1).Code)
	assert.Equal(t, core.UserCaller("alice"), a.lastEvent().Caller)

	w := a.postWith("alice", -1, http.Header{"X-Skip": {"1"}})
	assert.Nil(t, a.last(), "a skipped request has no decision")
	assert.Equal(t, http.StatusInternalServerError, w.Code, "the handler ran, and found no decision")
	assert.Empty(t, w.Header().Get("Ratescope-Warning"))
}

func testRPCFailOpen(t *testing.T) {
	a := newRPCApp(t, rpcOptions{store: failingStore{err: errDown}})
	for range 100 {
		require.Equal(t, http.StatusOK, a.post("alice", 3000).Code)
		d := a.last()
		assert.True(t, d.Allowed)
		assert.Equal(t, core.OutcomeFailedOpen, d.Outcome)
		assert.Zero(t, d.Balance)
		assert.ErrorIs(t, d.StoreErr, errDown)
	}
}

func testRPCExemptNetworks(t *testing.T) {
	// The requests come from 192.0.2.1.
	a := newRPCApp(t, rpcOptions{tweak: func(c *core.Config) {
		c.ExemptNetworks = core.Networks{netip.MustParsePrefix("192.0.2.0/24")}
	}})
	for i := range 20 {
		w := a.post("", 3000)
		require.Equal(t, http.StatusOK, w.Code, "request %d is never dropped", i+1)
		d := a.last()
		assert.Equal(t, core.OutcomeExempt, d.Outcome)
		assert.Zero(t, d.Balance)
	}
	for range 20 {
		require.Equal(t, http.StatusOK, a.post("alice", 3000).Code, "signed in from the exempt network")
	}
}

func testRPCFailClosed(t *testing.T) {
	a := newRPCApp(t, rpcOptions{store: failingStore{err: errDown}, failMode: core.FailClosed})
	for range 3 {
		w := a.post("alice", 20)
		require.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Equal(t, strconv.Itoa(int(time.Second/time.Second)), w.Header().Get("Retry-After"))
	}
	assert.Zero(t, a.served(), "the handler never runs")
}

// testRPCHeaderModes charges a caller past the warning threshold under
// each header policy: the warning field is on the served response under
// "all" only, while the decision's Load is the same.
func testRPCHeaderModes(t *testing.T) {
	for _, tc := range []struct {
		mode    core.HeaderMode
		warning bool
	}{
		{mode: core.HeadersAll, warning: true},
		{mode: core.HeadersRefused},
		{mode: core.HeadersNone},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			a := newRPCApp(t, rpcOptions{tweak: func(c *core.Config) { c.Headers = tc.mode }})
			// rippled's policy warns at a balance of 5000: a cost of
			// 5000*32 in one request reaches it.
			w := a.post("alice", 5000*32)
			require.Equal(t, http.StatusOK, w.Code)
			require.True(t, a.last().Load, "the caller is warned")
			assert.Equal(t, tc.warning, w.Header().Get("Ratescope-Warning") == "load", "%v", w.Header())
		})
	}
}
