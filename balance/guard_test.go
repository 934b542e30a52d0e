package balance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// newGuard returns a guard of cfg on a limiter of lcfg: a memory store
// and a fake clock unless they say otherwise, the limiter's store for the
// balances unless cfg names one.
func newGuard(t *testing.T, lcfg core.Config, cfg balance.Config) *balance.Guard {
	t.Helper()
	if lcfg.Store == nil {
		s := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = s.Close() })
		lcfg.Store = s
	}
	if lcfg.Now == nil {
		lcfg.Now = storetest.NewClock(storetest.Start).Now
	}
	lim, err := core.New(lcfg)
	require.NoError(t, err)
	if cfg.Store == nil {
		cfg.Store = lcfg.Store.(balance.Store)
	}
	cfg.Limiter = lim
	g, err := balance.New(cfg)
	require.NoError(t, err)
	return g
}

func anonCaller(addr string) core.Caller {
	return core.NetworkCaller(netip.PrefixFrom(netip.MustParseAddr(addr), 32))
}

// decide is Charge, then SetHeaders of the decision: what a balance
// route does.
func decide(g *balance.Guard, caller core.Caller, cost int64, h http.Header) *balance.Decision {
	d := g.Charge(context.Background(), caller, cost)
	d.SetHeaders(h)
	return d
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	lim, err := core.New(core.Config{Store: store})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		cfg   balance.Config
		wants []string
	}{
		{name: "no limiter", cfg: balance.Config{Store: store, Scope: "ws"}, wants: []string{"no Limiter: build one with core.New"}},
		{name: "no store", cfg: balance.Config{Limiter: lim, Scope: "ws"}, wants: []string{"no Store: use memstore or redisstore"}},
		{name: "no scope", cfg: balance.Config{Limiter: lim, Store: store}, wants: []string{"no Scope: name the balance scope", "it is required"}},
		{name: "bad name", cfg: balance.Config{Limiter: lim, Store: store, Scope: "Web Socket"}, wants: []string{`"Web Socket"`}},
		{name: "window", cfg: balance.Config{Limiter: lim, Store: store, Scope: "ws", Policy: balance.Policy{Window: 1500 * time.Millisecond}}, wants: []string{"Window 1.5s"}},
		{name: "long window", cfg: balance.Config{Limiter: lim, Store: store, Scope: "ws", Policy: balance.Policy{Window: 2 * time.Hour}}, wants: []string{"Window 2h0m0s", "1s to 1h0m0s"}},
		{name: "every problem", cfg: balance.Config{Store: store, Scope: "WS", Policy: balance.Policy{Warn: -1, DropCost: -2}}, wants: []string{"no Limiter", `Scope "WS"`, "Warn -1", "DropCost -2"}},
		// The warning above the drop: callers would be dropped without
		// ever being warned (issue 34), which started silently before.
		{name: "warn above drop", cfg: balance.Config{Limiter: lim, Store: store, Scope: "ws", Policy: balance.Policy{Window: 32 * time.Second, Warn: 20000, WarnCost: 2000, Drop: 100, DropCost: 3000}}, wants: []string{"Warn 20000 is above Drop 100", "dropped without a warning"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := balance.New(tc.cfg)
			require.Error(t, err)
			assert.ErrorContains(t, err, "balance: invalid config: ")
			assert.Equal(t, tc.cfg.Validate().Error(), strings.TrimPrefix(err.Error(), "balance: invalid config: "), "New fails with Validate's error")
			for _, w := range tc.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	cfg := balance.DefaultConfig()
	cfg.Limiter, cfg.Store, cfg.Scope = lim, store, "ws"
	cfg.Policy.Warn = cfg.Policy.Drop
	assert.NoError(t, cfg.Validate(), "a warning at the drop threshold warns the request that reaches it")
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	var events []core.Event
	g := newGuard(t, core.Config{Observe: func(_ context.Context, e core.Event) { events = append(events, e) }}, balance.Config{Scope: "rpc"})
	got := balance.GuardConfig(g)
	assert.Equal(t, "rpc", got.Scope)
	rippled := balance.DefaultConfig().Policy
	rippled.WarnCost, rippled.DropCost = 2000, 3000
	assert.Equal(t, rippled, got.Policy, "rippled's figures, the costs scaled with the thresholds")
	assert.Equal(t, balance.Policy{Window: 32 * time.Second, Warn: 5000, WarnEvery: time.Second, Drop: 15000}, balance.DefaultConfig().Policy,
		"DefaultConfig has the default policy, WarnCost and DropCost left to scale")
	assert.Equal(t, []int64{20, 100, 400, 3000}, []int64{balance.CostReference, balance.CostMalformed, balance.CostMedium, balance.CostHeavy}, "rippled's costs")
	assert.Equal(t, core.FailOpen, got.FailMode)

	// A cost means itself: no negative number stands for the reference
	// cost, and a cost below 0 earns no credit.
	ip := core.NetworkCaller(netip.MustParsePrefix("192.0.2.1/32"))
	g.Charge(context.Background(), ip, balance.CostReference)
	require.Len(t, events, 1)
	assert.Equal(t, int64(20), events[0].Cost)
	d := decide(g, ip, -5, http.Header{})
	require.Len(t, events, 2)
	assert.Equal(t, int64(0), events[1].Cost, "a cost below 0 is 0")
	assert.Equal(t, int64(20/32), d.Balance, "and charged nothing")
	g.Charge(context.Background(), ip, 0)
	require.Len(t, events, 3)
	assert.Equal(t, int64(0), events[2].Cost, "0 reads the balance")
}

// TestScaledCosts: a zero WarnCost or DropCost is scaled with its
// threshold, so that the default policy with low thresholds lets a caller who
// retries once a second back in; a DropCost that would keep it out for
// ever is refused; a policy that leaves a threshold or the window out is
// an error that says how to write it.
func TestScaledCosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		warn, drop       int64
		wantWarn, wantDC int64
	}{
		{name: "rippled's", warn: 5000, drop: 15000, wantWarn: 2000, wantDC: 3000},
		{name: "the how-to's", warn: 100, drop: 150, wantWarn: 40, wantDC: 30},
		{name: "the portal's -warn 100 -drop 300", warn: 100, drop: 300, wantWarn: 40, wantDC: 60},
		{name: "low", warn: 1000, drop: 2000, wantWarn: 400, wantDC: 400},
		{name: "tiny", warn: 1, drop: 4, wantWarn: 0, wantDC: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			policy := balance.DefaultConfig().Policy
			policy.Warn, policy.Drop = tc.warn, tc.drop
			g := newGuard(t, core.Config{Logger: slog.New(slog.DiscardHandler)}, balance.Config{Scope: "ws", Policy: policy})
			want := policy
			want.WarnCost, want.DropCost = tc.wantWarn, tc.wantDC
			assert.Equal(t, want, balance.GuardConfig(g).Policy)
		})
	}

	// Dropped at a balance of 2004 under a drop at 2000, a caller that
	// retries once a second is let back in within a few seconds.
	clock := storetest.NewClock(storetest.Start)
	policy := balance.DefaultConfig().Policy
	policy.Warn, policy.Drop = 1000, 2000
	g := newGuard(t, core.Config{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)}, balance.Config{Scope: "ws", Policy: policy})
	ctx := context.Background()
	who := anonCaller("192.0.2.1")
	require.True(t, g.Charge(ctx, who, 2004*32).Allowed)
	back := 0
	for i := 1; i <= 60; i++ {
		if g.Charge(ctx, who, 20).Allowed {
			back = i
			break
		}
		clock.Advance(time.Second)
	}
	assert.Equal(t, 2, back, "served again at the second retry")
	clock.Advance(time.Second)
	assert.True(t, g.Charge(ctx, who, 20).Allowed, "and not dropped again by its warning")

	// rippled's 3000 at that threshold would keep it out: refused.
	policy.DropCost = 3000
	err := balance.Config{Scope: "ws", Policy: policy}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DropCost 3000 at Drop 2000: a caller refused once a second would be kept out for ever")
	assert.Contains(t, err.Error(), "at most 2064")
	policy.DropCost = 2064
	assert.NotContains(t, balance.Config{Scope: "ws", Policy: policy}.Validate().Error(), "DropCost")

	err = balance.Config{Scope: "ws", Policy: balance.Policy{Warn: 100}}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Policy leaves Window, Drop zero`)
	assert.Contains(t, err.Error(), "start from balance.DefaultConfig().Policy")
}

func TestChargeWarnDropAndLog(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	clock := storetest.NewClock(storetest.Start)
	g := newGuard(t, core.Config{Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, balance.Config{Scope: "ws"})
	ctx := context.Background()
	who := anonCaller("198.51.100.7")

	d := g.Charge(ctx, who, 20)
	assert.Equal(t, &balance.Decision{Allowed: true, Balance: 0, Outcome: core.OutcomeAllowed}, d)
	// Heavy requests, many a second, until warned and then dropped.
	var warned, dropped int
	for i := range 1000 {
		clock.Advance(10 * time.Millisecond)
		d = g.Charge(ctx, who, 3000)
		if d.Load {
			warned++
			assert.GreaterOrEqual(t, d.Balance, int64(5000))
		}
		if !d.Allowed {
			dropped = i
			break
		}
	}
	require.NotZero(t, dropped, "dropped at last")
	assert.Positive(t, warned, "warned before the drop")
	assert.False(t, d.Load, "a dropped request carries no warning")
	assert.Equal(t, core.OutcomeDenied, d.Outcome)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2, "the drop and the first refusal: %s", logs.String())
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	assert.Equal(t, "WARN", rec["level"])
	assert.Regexp(t, `^Consumer entry 198\.51\.100\.7 dropped with balance 1[5-9]\d{3} at or above drop threshold 15000$`, rec["msg"])
	assert.Equal(t, "198.51.100.7", rec["caller"])
	assert.Equal(t, float64(15000), rec["threshold"])
	assert.Contains(t, rec["msg"], "balance "+jsonNumber(rec["balance"])+" ")
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	assert.Equal(t, "ratescope: refused a request of a dropped caller", rec["msg"])
	assert.Equal(t, float64(0), rec["suppressed_in_scope"])

	// The drop is logged when the caller becomes dropped, not on every
	// refusal: 1,000 more refused requests within ErrorLogInterval (10s)
	// add no line (they wrote 1,000 before issue 18); the next refusal
	// after it, one with their number.
	for range 1000 {
		clock.Advance(time.Millisecond)
		d = g.Charge(ctx, who, 20)
		require.False(t, d.Allowed)
	}
	assert.Len(t, strings.Split(strings.TrimSpace(logs.String()), "\n"), 2, logs.String())
	clock.Advance(10 * time.Second)
	require.False(t, g.Charge(ctx, who, 20).Allowed, "still dropped")
	lines = strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 3, logs.String())
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &rec))
	assert.Equal(t, "ratescope: refused a request of a dropped caller", rec["msg"])
	assert.Equal(t, float64(1000), rec["suppressed_in_scope"])

	// A signed-in caller is logged by user id.
	alice := core.UserCaller("alice")
	for d = g.Charge(ctx, alice, 480000); d.Allowed; d = g.Charge(ctx, alice, 0) {
	}
	assert.Contains(t, logs.String(), `"msg":"Consumer entry alice dropped with balance`)
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestExempt(t *testing.T) {
	t.Parallel()
	g := newGuard(t, core.Config{}, balance.Config{Scope: "ws"})
	root := core.UserCaller("root")
	for range 100 {
		d := g.Exempt(context.Background(), root)
		assert.Equal(t, &balance.Decision{Allowed: true, Outcome: core.OutcomeExempt}, d)
	}
	d := g.Charge(context.Background(), root, 0)
	assert.Zero(t, d.Balance, "an exempt caller is never charged")
}

// TestExemptByTheLimiter checks that the limiter's allowlists exempt a
// caller from the balance as from its windows.
func TestExemptByTheLimiter(t *testing.T) {
	t.Parallel()
	var outcomes []core.Outcome
	g := newGuard(t, core.Config{
		ExemptNetworks: core.Networks{netip.MustParsePrefix("198.51.100.0/24")},
		ExemptUsers:    []string{"monitor"},
		Observe:        func(_ context.Context, e core.Event) { outcomes = append(outcomes, e.Outcome) },
	}, balance.Config{Scope: "ws"})
	for _, caller := range []core.Caller{anonCaller("198.51.100.7"), core.UserCaller("monitor")} {
		for range 20 {
			d := g.Charge(context.Background(), caller, 3000)
			assert.True(t, d.Allowed)
			assert.Equal(t, core.OutcomeExempt, d.Outcome)
			assert.Zero(t, d.Balance, "never charged")
		}
	}
	d := g.Charge(context.Background(), anonCaller("192.0.2.1"), 3000)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome)
	assert.Equal(t, int64(3000)/32, d.Balance, "a caller not exempt is charged")
	assert.Len(t, outcomes, 41)
}

// failingStore fails every call with err.
type failingStore struct{ err error }

func (s failingStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(s.err).Bind("", 0, nil)
}

func (s failingStore) Charge(context.Context, balance.Request) (balance.Result, error) {
	return balance.Result{}, s.err
}

func (s failingStore) ResetBalance(context.Context, balance.Request) error { return s.err }

var errDown = errors.New("store down")

func TestFailsOpen(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	store := failingStore{err: errDown}
	lim, err := core.New(core.Config{Store: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	g, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ws"})
	require.NoError(t, err)
	d := g.Charge(context.Background(), anonCaller("192.0.2.1"), 3000)
	assert.True(t, d.Allowed)
	assert.Zero(t, d.Balance, "not charged")
	assert.Equal(t, core.OutcomeFailedOpen, d.Outcome)
	assert.ErrorIs(t, d.StoreErr, errDown)
	assert.Zero(t, d.RetryAfter())
	assert.Equal(t, int64(1), lim.StoreFailures(), "counted by the limiter")
	assert.Contains(t, logs.String(), "fail open")
	assert.Contains(t, logs.String(), "scope=ws")
}

// breakerOpen is a store error that says how long the store will fail, as
// the Redis store's does while its circuit breaker is open.
type breakerOpen struct{ wait time.Duration }

func (e breakerOpen) Error() string             { return "breaker open" }
func (e breakerOpen) RetryAfter() time.Duration { return e.wait }

func TestFailClosed(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{name: "breaker open", err: breakerOpen{wait: 2 * time.Second}, want: 2 * time.Second},
		{name: "unknown", err: errDown, want: time.Second},
	} {
		store := failingStore{err: tc.err}
		lim, err := core.New(core.Config{Store: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		rpc, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "rpc", FailMode: core.FailClosed})
		require.NoError(t, err)
		ws, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ws"})
		require.NoError(t, err)
		h := http.Header{}
		d := decide(rpc, anonCaller("192.0.2.1"), 20, h)
		assert.False(t, d.Allowed, tc.name)
		assert.Zero(t, d.Balance, "not charged")
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		assert.Equal(t, tc.want, d.RetryAfter())
		assert.Equal(t, http.Header{"Retry-After": {strings.TrimSuffix(tc.want.String(), "s")}}, h)
		d = ws.Charge(context.Background(), anonCaller("192.0.2.1"), 20)
		assert.True(t, d.Allowed, "the other balance scopes fail open")
		assert.Equal(t, int64(2), lim.StoreFailures())
	}
	assert.Contains(t, logs.String(), "fails closed")
}

// TestObserved checks that the limiter's Config.Observe sees every balance
// decision, with its outcome, as it sees window decisions.
func TestObserved(t *testing.T) {
	t.Parallel()
	type seen struct {
		scope   string
		caller  string
		outcome core.Outcome
		cost    int64
		window  bool
	}
	var got []seen
	observe := func(_ context.Context, e core.Event) {
		got = append(got, seen{e.Scope, e.Caller.String(), e.Outcome, e.Cost, e.Decision != nil})
	}
	policy := balance.DefaultConfig().Policy
	policy.Warn, policy.Drop = 100, 150
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	lim, err := core.New(core.Config{Store: store, Observe: observe, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	g, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ws", Policy: policy})
	require.NoError(t, err)
	ctx := context.Background()
	caller := anonCaller("192.0.2.1")
	g.Charge(ctx, caller, 32*150) // balance 150: at the drop threshold
	g.Charge(ctx, caller, 20)     // dropped
	g.Exempt(ctx, core.UserCaller("root"))
	_, err = lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.Equal(t, []seen{
		{"ws", "192.0.2.1", core.OutcomeAllowed, 32 * 150, false},
		{"ws", "192.0.2.1", core.OutcomeDenied, 20, false},
		{"ws", "root", core.OutcomeExempt, 0, false},
		{"api", "192.0.2.1", core.OutcomeAllowed, 1, true},
	}, got)

	failing := failingStore{err: errDown}
	flim, err := core.New(core.Config{Store: failing, Observe: observe, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	fg, err := balance.New(balance.Config{Limiter: flim, Store: failing, Scope: "ws"})
	require.NoError(t, err)
	got = nil
	fg.Charge(ctx, caller, 20)
	assert.Equal(t, []seen{{"ws", "192.0.2.1", core.OutcomeFailedOpen, 20, false}}, got)
}

func TestHeaderModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mode    core.HeaderMode
		warning bool
	}{
		{name: "all", mode: core.HeadersAll, warning: true},
		{name: "refused", mode: core.HeadersRefused},
		{name: "none", mode: core.HeadersNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			policy := balance.DefaultConfig().Policy
			policy.Warn, policy.WarnCost, policy.Drop = 10, 0, 1000
			g := newGuard(t, core.Config{Headers: tc.mode}, balance.Config{Scope: "rpc", Policy: policy})
			h := http.Header{}
			d := decide(g, anonCaller("192.0.2.8"), 20*32, h)
			require.True(t, d.Allowed)
			require.True(t, d.Load)
			if tc.warning {
				assert.Equal(t, "load", h.Get("Ratescope-Warning"))
			} else {
				assert.Empty(t, h)
			}
		})
	}
}

// TestReset checks that a reset sets the caller's balance back to zero,
// and is observed as a balance event.
func TestReset(t *testing.T) {
	t.Parallel()
	var seen []core.Event
	g := newGuard(t, core.Config{
		Logger:  slog.New(slog.DiscardHandler),
		Observe: func(_ context.Context, e core.Event) { seen = append(seen, e) },
	}, balance.Config{Scope: "ws"})
	ctx := context.Background()
	caller := anonCaller("192.0.2.1")
	require.True(t, g.Charge(ctx, caller, 32*16000).Allowed, "served, and dropped from now on")
	require.False(t, g.Charge(ctx, caller, 20).Allowed, "dropped")
	seen = nil
	require.NoError(t, g.Reset(ctx, caller))
	require.Len(t, seen, 1)
	assert.Equal(t, core.OutcomeReset, seen[0].Outcome)
	assert.Equal(t, "ws", seen[0].Scope)
	assert.Equal(t, caller, seen[0].Caller)
	assert.Nil(t, seen[0].Decision, "a balance scope's reset has no window decision")
	d := g.Charge(ctx, caller, 20)
	assert.True(t, d.Allowed)
	assert.Zero(t, d.Balance)
}

// TestResetFails checks that the store's error of a reset is returned,
// wrapped, and not observed.
func TestResetFails(t *testing.T) {
	t.Parallel()
	observed := 0
	store := failingStore{err: errDown}
	lim, err := core.New(core.Config{Store: store, Observe: func(context.Context, core.Event) { observed++ }})
	require.NoError(t, err)
	g, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ws"})
	require.NoError(t, err)
	err = g.Reset(context.Background(), anonCaller("192.0.2.1"))
	require.ErrorIs(t, err, errDown)
	assert.ErrorContains(t, err, `balance: reset "192.0.2.1" in scope "ws": store down`)
	assert.Zero(t, observed, "a failed reset is not observed")
	err = lim.Reset(context.Background(), "ws", anonCaller("192.0.2.1"))
	assert.ErrorIs(t, err, core.ErrUnknownScope, "the limiter has no balance scopes")
}

func TestWriteOverloaded(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	balance.WriteOverloaded(w)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "Server is overloaded", w.Body.String())
}

// TestDecisionSize holds the size class of the Decision every charge
// returns (112 B): a field that takes it to the next class costs every
// request.
func TestDecisionSize(t *testing.T) {
	t.Parallel()
	assert.LessOrEqual(t, reflect.TypeFor[balance.Decision]().Size(), uintptr(112), "balance.Decision")
}

// TestHugeCost: the largest cost fills the balance instead of wrapping it
// round to a credit: the request is served (the caller was below the
// threshold) and the caller's next requests are refused.
func TestHugeCost(t *testing.T) {
	t.Parallel()
	var cost int64
	g := newGuard(t, core.Config{
		Logger:  slog.New(slog.DiscardHandler),
		Observe: func(_ context.Context, e core.Event) { cost = e.Cost },
	}, balance.Config{Scope: "ws"})
	ctx := context.Background()
	who := anonCaller("192.0.2.1")
	g.Charge(ctx, who, 3000)
	d := g.Charge(ctx, who, math.MaxInt64)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(math.MaxInt64), cost)
	assert.Equal(t, int64(1<<53)/32, d.Balance, "saturated, not negative")
	for _, cost := range []int64{20, 0, math.MaxInt64} {
		d = g.Charge(ctx, who, cost)
		assert.False(t, d.Allowed, "cost %d", cost)
		assert.Positive(t, d.Balance)
	}
}

// TestDecisionJSON: a balance decision marshals its outcome as text.
func TestDecisionJSON(t *testing.T) {
	t.Parallel()
	policy := balance.DefaultConfig().Policy
	policy.Warn, policy.Drop = 100, 150
	g := newGuard(t, core.Config{Logger: slog.New(slog.DiscardHandler)}, balance.Config{Scope: "ws", Policy: policy})
	ctx := context.Background()
	who := core.UserCaller("alice")
	for _, want := range []string{"allowed", "allowed", "denied"} {
		b, err := json.Marshal(g.Charge(ctx, who, 3000))
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(b, &got))
		assert.Equal(t, want, got["Outcome"], string(b))
	}
	b, err := json.Marshal(g.Exempt(ctx, who))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Outcome":"exempt"`)
}

// TestRefusalLogCountsTheScope: the rate-limited line of refusals names
// the caller of the refusal it logs, and suppressed_in_scope counts the
// refusals of every dropped caller of the scope left out since the last.
func TestRefusalLogCountsTheScope(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	clock := storetest.NewClock(storetest.Start)
	g := newGuard(t, core.Config{Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, balance.Config{Scope: "ws"})
	ctx := context.Background()
	alice, bob := core.UserCaller("alice"), core.UserCaller("bob")
	for _, who := range []core.Caller{alice, bob} {
		require.True(t, g.Charge(ctx, who, 30000*32).Allowed)
	}
	require.False(t, g.Charge(ctx, alice, 20).Allowed) // logged
	for range 3 {
		require.False(t, g.Charge(ctx, alice, 20).Allowed)
		require.False(t, g.Charge(ctx, bob, 20).Allowed)
	}
	clock.Advance(10 * time.Second)
	require.False(t, g.Charge(ctx, bob, 20).Allowed) // logged, counting both
	var refusals []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		if rec["msg"] == "ratescope: refused a request of a dropped caller" {
			refusals = append(refusals, rec)
		}
	}
	require.Len(t, refusals, 2, logs.String())
	assert.Equal(t, "alice", refusals[0]["caller"])
	assert.Equal(t, float64(0), refusals[0]["suppressed_in_scope"])
	assert.Equal(t, "bob", refusals[1]["caller"])
	assert.Equal(t, float64(6), refusals[1]["suppressed_in_scope"], "three of alice's and three of bob's")
}

func TestFailModeLocalRefused(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{})
	t.Cleanup(func() { _ = store.Close() })
	lim, err := core.New(core.Config{Store: store})
	require.NoError(t, err)
	_, err = balance.New(balance.Config{Limiter: lim, Store: store, Scope: "rpc", FailMode: core.FailLocal})
	assert.ErrorContains(t, err, "balance: invalid config: FailMode local: a balance scope fails open or closed, not local; use core.FailClosed to refuse while the store fails")
}
