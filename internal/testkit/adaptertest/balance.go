package adaptertest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// CostHeader is the request header that carries a request's cost in the
// balance suite.
const CostHeader = "X-Cost"

// BalanceOptions is what a subtest of [RunBalance] asks of the adapter's
// balance middleware (NewBalance), in terms of no framework. The builder
// serves POST [Path] with it; the user is read from the [UserHeader].
type BalanceOptions struct {
	// Limiter and Scope are BalanceConfig.Limiter and BalanceConfig.Scope.
	Limiter *core.Limiter
	Scope   string
	// Cost, when not nil, is BalanceConfig.Cost: the builder's Cost calls
	// it with the request.
	Cost func(r *http.Request) int64
	// Exempt, when not nil, is BalanceConfig.Exempt, called with the
	// caller.
	Exempt func(caller core.Caller) bool
	// Key and Skip, when not nil, are BalanceConfig.Key and
	// BalanceConfig.Skipper, called with the request.
	Key  func(r *http.Request) string
	Skip func(r *http.Request) bool
	// Handler is the route's handler: the builder's handler reads the
	// decision with the adapter's BalanceDecision and calls Handler.
	Handler func(w http.ResponseWriter, d *core.BalanceDecision, ok bool)
}

// RunBalance runs the suite of the balance middleware: warned with the
// header, then dropped with 503 "Server is overloaded" before the handler,
// the drop logged once per drop; the default cost; exemption; callers by
// key; skipped requests; failing open; the warning field under each
// header policy (core.Config.Headers).
func RunBalance(t *testing.T, build func(t *testing.T, o BalanceOptions) http.Handler) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, build balanceBuilder)
	}{
		{"WarnedThenDroppedWith503", testBalanceDrop},
		{"DefaultCostIsReference", testBalanceDefaultCost},
		{"ExemptNeverCharged", testBalanceExempt},
		{"KeyAndSkipper", testBalanceKeyAndSkipper},
		{"StoreFailureFailsOpen", testBalanceFailOpen},
		{"ExemptNetworksNeverCharged", testBalanceExemptNetworks},
		{"FailClosedAnswers503WithRetryAfter", testBalanceFailClosed},
		{"HeaderModes", testBalanceHeaderModes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, build)
		})
	}
}

type balanceBuilder = func(t *testing.T, o BalanceOptions) http.Handler

type balanceApp struct {
	t    *testing.T
	h    http.Handler
	logs *bytes.Buffer

	mu   sync.Mutex
	seen []*core.BalanceDecision
}

func newBalanceApp(t *testing.T, build balanceBuilder, store core.Store, o BalanceOptions) *balanceApp {
	t.Helper()
	return newBalanceAppWith(t, build, store, nil, o)
}

// newBalanceAppWith is newBalanceApp on a limiter whose config tweak
// changes, if not nil.
func newBalanceAppWith(t *testing.T, build balanceBuilder, store core.Store, tweak func(*core.Config), o BalanceOptions) *balanceApp {
	t.Helper()
	if store == nil {
		ms := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = ms.Close() })
		store = ms
	}
	a := &balanceApp{t: t, logs: &bytes.Buffer{}}
	cfg := core.Config{
		Store:      store,
		NumProxies: core.Proxies(0),
		Now:        storetest.NewClock(storetest.Start).Now,
		Logger:     slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Balances:   []core.BalanceScope{{Name: "rpc"}},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	lim, err := core.New(cfg)
	require.NoError(t, err)
	o.Limiter, o.Scope = lim, "rpc"
	o.Handler = a.handle
	a.h = build(t, o)
	return a
}

func (a *balanceApp) handle(w http.ResponseWriter, d *core.BalanceDecision, ok bool) {
	a.mu.Lock()
	a.seen = append(a.seen, d)
	a.mu.Unlock()
	if !ok {
		http.Error(w, "no decision", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "ok")
}

func (a *balanceApp) last() *core.BalanceDecision {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.NotEmpty(a.t, a.seen, "the handler never ran")
	return a.seen[len(a.seen)-1]
}

func (a *balanceApp) served() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

func (a *balanceApp) post(who string, cost int64) *httptest.ResponseRecorder {
	return a.postWith(who, cost, nil)
}

// postWith is post with more request headers.
func (a *balanceApp) postWith(who string, cost int64, h http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{"method":"ping"}`))
	req.RemoteAddr = "192.0.2.1:1234"
	for k, v := range h {
		req.Header[k] = v
	}
	if who != "" {
		req.Header.Set(UserHeader, who)
	}
	if cost >= 0 {
		req.Header.Set(CostHeader, strconv.FormatInt(cost, 10))
	}
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, req)
	return w
}

// costFromHeader is a BalanceOptions.Cost: the CostHeader's number.
func costFromHeader(r *http.Request) int64 {
	n, _ := strconv.ParseInt(r.Header.Get(CostHeader), 10, 64)
	return n
}

func testBalanceDrop(t *testing.T, build balanceBuilder) {
	a := newBalanceApp(t, build, nil, BalanceOptions{Cost: costFromHeader})
	var w *httptest.ResponseRecorder
	warned := 0
	for range 1000 {
		w = a.post("alice", 3000)
		if w.Code != http.StatusOK {
			break
		}
		d := a.last()
		assert.Equal(t, d.Load, w.Header().Get(core.HeaderWarning) == "load", "the header says what the decision says")
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
	assert.Empty(t, w.Header().Get(core.HeaderWarning))
}

func testBalanceDefaultCost(t *testing.T, build balanceBuilder) {
	a := newBalanceApp(t, build, nil, BalanceOptions{})
	for range 8 {
		require.Equal(t, http.StatusOK, a.post("", -1).Code)
	}
	d := a.last()
	assert.Equal(t, int64(20), d.Cost)
	assert.Equal(t, int64(8*20/32), d.Balance)
	assert.Equal(t, "192.0.2.1", d.Caller.String())
	assert.True(t, d.Checked)
}

func testBalanceExempt(t *testing.T, build balanceBuilder) {
	a := newBalanceApp(t, build, nil, BalanceOptions{Cost: costFromHeader, Exempt: func(c core.Caller) bool { return c.User() == "root" }})
	for range 300 {
		w := a.post("root", 3000)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Empty(t, w.Header().Get(core.HeaderWarning))
		d := a.last()
		assert.False(t, d.Checked)
		assert.False(t, d.Load)
	}
	assert.Empty(t, a.logs.String())
	a.post("alice", 3000)
	assert.True(t, a.last().Checked)
}

func testBalanceKeyAndSkipper(t *testing.T, build balanceBuilder) {
	a := newBalanceApp(t, build, nil, BalanceOptions{
		Key:  func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
		Skip: func(r *http.Request) bool { return r.Header.Get("X-Skip") != "" },
	})
	require.Equal(t, http.StatusOK, a.postWith("alice", -1, http.Header{"X-Api-Key": {"k1"}}).Code)
	assert.Equal(t, core.KeyCaller("k1"), a.last().Caller, "a key wins over the user, as for windows")
	require.Equal(t, http.StatusOK, a.post("alice", -1).Code)
	assert.Equal(t, core.UserCaller("alice"), a.last().Caller)

	w := a.postWith("alice", -1, http.Header{"X-Skip": {"1"}})
	assert.Nil(t, a.last(), "a skipped request has no decision")
	assert.Equal(t, http.StatusInternalServerError, w.Code, "the handler ran, and found no decision")
	assert.Empty(t, w.Header().Get(core.HeaderWarning))
}

// failingBalances is a balance store that cannot be reached.
type failingBalances struct{ failingStore }

func (failingBalances) Charge(context.Context, core.BalanceRequest) (core.BalanceResult, error) {
	return core.BalanceResult{}, errDown
}

func testBalanceFailOpen(t *testing.T, build balanceBuilder) {
	a := newBalanceApp(t, build, failingBalances{}, BalanceOptions{Cost: costFromHeader})
	for range 100 {
		require.Equal(t, http.StatusOK, a.post("alice", 3000).Code)
		d := a.last()
		assert.True(t, d.Allowed)
		assert.False(t, d.Checked)
		assert.ErrorIs(t, d.StoreErr, errDown)
	}
}
