package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
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

// windowsOnly is a store that keeps no balances.
type windowsOnly struct{ core.Store }

func TestBalanceNeedsABalanceStore(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	_, err := core.New(core.Config{Store: windowsOnly{store}, Balances: []core.BalanceScope{{Name: "ws"}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keeps no balances")
	assert.Contains(t, err.Error(), "core.BalanceStore")

	_, err = core.New(core.Config{Store: windowsOnly{store}})
	assert.NoError(t, err, "without balance scopes, any store does")
}

func TestBalanceConfigErrors(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	for _, tc := range []struct {
		name     string
		balances []core.BalanceScope
		wants    []string
	}{
		{name: "bad name", balances: []core.BalanceScope{{Name: "Web Socket"}}, wants: []string{`"Web Socket"`}},
		{name: "twice", balances: []core.BalanceScope{{Name: "ws"}, {Name: "ws"}}, wants: []string{`"ws" is defined twice`}},
		{name: "window", balances: []core.BalanceScope{{Name: "ws", BalancePolicy: core.BalancePolicy{Window: 1500 * time.Millisecond}}}, wants: []string{"Window 1.5s"}},
		{name: "long window", balances: []core.BalanceScope{{Name: "ws", BalancePolicy: core.BalancePolicy{Window: 2 * time.Hour}}}, wants: []string{"Window 2h0m0s", "1s to 1h0m0s"}},
		{name: "every problem", balances: []core.BalanceScope{{Name: "ws", BalancePolicy: core.BalancePolicy{Warn: -1, DropCost: -2}, Costs: core.CostClasses{Heavy: -3}}}, wants: []string{"Warn -1", "DropCost -2", "cost -3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := core.New(core.Config{Store: store, Balances: tc.balances})
			require.Error(t, err)
			for _, w := range tc.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestBalanceDefaults(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Balances: []core.BalanceScope{{Name: "rpc"}}})
	b, err := lim.BalanceGuard("rpc")
	require.NoError(t, err)
	want := core.DefaultBalancePolicy()
	assert.Equal(t, core.BalanceScope{Name: "rpc", BalancePolicy: want, Costs: core.CostClasses{Reference: 20, Malformed: 100, Medium: 400, Heavy: 3000}}, b.Scope())
	assert.Equal(t, []core.BalanceScope{b.Scope()}, lim.Config().Balances)
	_, err = lim.BalanceGuard("api")
	assert.ErrorContains(t, err, `unknown balance scope "api"`)

	// A cost means itself: no negative number stands for the reference
	// cost, and a cost below 0 earns no credit.
	ip := core.NetworkCaller(netip.MustParsePrefix("192.0.2.1/32"))
	assert.Equal(t, int64(20), b.Charge(context.Background(), ip, b.Scope().Costs.Reference).Cost)
	d := b.Decide(context.Background(), ip, -5, http.Header{})
	assert.Equal(t, int64(0), d.Cost, "a cost below 0 is 0")
	assert.Equal(t, int64(20/32), d.Balance, "and charged nothing")
	assert.Equal(t, int64(0), b.Charge(context.Background(), ip, 0).Cost, "0 reads the balance")
}

// TestBalanceZeroFigures sets WarnCost and DropCost to 0, which became
// rippled's 2000 and 3000 before issue 18: a policy other than the zero one
// is taken as written, and one that leaves a threshold or the window out
// is an error that says how to write it.
func TestBalanceZeroFigures(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	policy := core.DefaultBalancePolicy()
	policy.Warn, policy.Drop = 100, 150
	policy.WarnCost, policy.DropCost = 0, 0
	lim := newLimiter(t, core.Config{Now: clock.Now, Logger: slog.New(slog.DiscardHandler), Balances: []core.BalanceScope{{Name: "ws", BalancePolicy: policy}}})
	b, err := lim.BalanceGuard("ws")
	require.NoError(t, err)
	assert.Equal(t, policy, b.Scope().BalancePolicy)

	ctx := context.Background()
	who := anonCaller("192.0.2.1")
	d := b.Charge(ctx, who, 32*120) // balance 120: warned, and the warning is free
	assert.True(t, d.Load)
	assert.Equal(t, int64(120), d.Balance)
	d = b.Charge(ctx, who, 32*30) // 150: at the drop threshold, dropped next
	require.True(t, d.Allowed)
	for range 10 {
		d = b.Charge(ctx, who, 3000)
		assert.False(t, d.Allowed)
		assert.Equal(t, int64(150), d.Balance, "a refusal costs nothing")
	}

	_, err = core.New(core.Config{Store: memstore.New(memstore.Config{SweepInterval: -1}), Balances: []core.BalanceScope{{Name: "ws", BalancePolicy: core.BalancePolicy{Warn: 100}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `balance scope "ws": BalancePolicy leaves Window, Drop zero`)
	assert.Contains(t, err.Error(), "start from core.DefaultBalancePolicy()")
	var ce *core.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, core.IDInvalidBalance, ce.ID)
}

func TestBalanceChargeWarnDropAndLog(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	clock := storetest.NewClock(storetest.Start)
	lim := newLimiter(t, core.Config{
		Now:      clock.Now,
		Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
		Balances: []core.BalanceScope{{Name: "ws"}},
	})
	b, err := lim.BalanceGuard("ws")
	require.NoError(t, err)
	ctx := context.Background()
	who := anonCaller("198.51.100.7")

	d := b.Charge(ctx, who, 20)
	assert.Equal(t, &core.BalanceDecision{Allowed: true, Checked: true, Scope: "ws", Caller: who, Cost: 20, Balance: 0, Outcome: core.OutcomeAllowed}, d)
	// Heavy requests, many a second, until warned and then dropped.
	var warned, dropped int
	for i := range 1000 {
		clock.Advance(10 * time.Millisecond)
		d = b.Charge(ctx, who, 3000)
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
	assert.Equal(t, float64(0), rec["suppressed"])

	// The drop is logged when the caller becomes dropped, not on every
	// refusal: 1,000 more refused requests within ErrorLogInterval (10s)
	// add no line (they wrote 1,000 before issue 18); the next refusal
	// after it, one with their number.
	for range 1000 {
		clock.Advance(time.Millisecond)
		d = b.Charge(ctx, who, 20)
		require.False(t, d.Allowed)
	}
	assert.Len(t, strings.Split(strings.TrimSpace(logs.String()), "\n"), 2, logs.String())
	clock.Advance(10 * time.Second)
	require.False(t, b.Charge(ctx, who, 20).Allowed, "still dropped")
	lines = strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 3, logs.String())
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &rec))
	assert.Equal(t, "ratescope: refused a request of a dropped caller", rec["msg"])
	assert.Equal(t, float64(1000), rec["suppressed"])

	// A signed-in caller is logged by user id.
	alice := core.UserCaller("alice")
	for d = b.Charge(ctx, alice, 480000); d.Allowed; d = b.Charge(ctx, alice, 0) {
	}
	assert.Contains(t, logs.String(), `"msg":"Consumer entry alice dropped with balance`)
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestBalanceExempt(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Balances: []core.BalanceScope{{Name: "ws"}}})
	b, err := lim.BalanceGuard("ws")
	require.NoError(t, err)
	root := core.UserCaller("root")
	for range 100 {
		d := b.Exempt(context.Background(), root)
		assert.Equal(t, &core.BalanceDecision{Allowed: true, Scope: "ws", Caller: root, Outcome: core.OutcomeExempt}, d)
	}
	d := b.Charge(context.Background(), root, 0)
	assert.Zero(t, d.Balance, "an exempt caller is never charged")
}

// failingBalances fails every decision.
type failingBalances struct{}

var errBalancesDown = errors.New("store down")

func (failingBalances) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(errBalancesDown).Bind("", 0, nil)
}

func (failingBalances) Charge(context.Context, core.BalanceRequest) (core.BalanceResult, error) {
	return core.BalanceResult{}, errBalancesDown
}

func TestBalanceFailsOpen(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	lim := newLimiter(t, core.Config{Store: failingBalances{}, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Balances: []core.BalanceScope{{Name: "ws"}}})
	b, err := lim.BalanceGuard("ws")
	require.NoError(t, err)
	d := b.Charge(context.Background(), anonCaller("192.0.2.1"), 3000)
	assert.True(t, d.Allowed)
	assert.False(t, d.Checked)
	assert.ErrorIs(t, d.StoreErr, errBalancesDown)
	assert.Equal(t, int64(1), lim.StoreFailures())
	assert.Contains(t, logs.String(), "fail open")
}

// TestBalanceObserved checks that Config.Observe sees every balance
// decision, with its outcome, as it sees window decisions.
func TestBalanceObserved(t *testing.T) {
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
		got = append(got, seen{e.Scope(), e.Caller().String(), e.Outcome(), e.Cost(), e.Decision != nil})
	}
	policy := core.DefaultBalancePolicy()
	policy.Warn, policy.Drop = 100, 150
	lim := newLimiter(t, core.Config{Observe: observe, Logger: slog.New(slog.DiscardHandler), Balances: []core.BalanceScope{{Name: "ws", BalancePolicy: policy}}})
	b, err := lim.BalanceGuard("ws")
	require.NoError(t, err)
	ctx := context.Background()
	caller := anonCaller("192.0.2.1")
	b.Charge(ctx, caller, 32*150) // balance 150: at the drop threshold
	b.Charge(ctx, caller, 20)     // dropped
	b.Exempt(ctx, core.UserCaller("root"))
	_, err = lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.Equal(t, []seen{
		{"ws", "192.0.2.1", core.OutcomeAllowed, 32 * 150, false},
		{"ws", "192.0.2.1", core.OutcomeDenied, 20, false},
		{"ws", "root", core.OutcomeExempt, 0, false},
		{"api", "192.0.2.1", core.OutcomeAllowed, 1, true},
	}, got)

	failing := newLimiter(t, core.Config{Store: failingBalances{}, Observe: observe, Logger: slog.New(slog.DiscardHandler), Balances: []core.BalanceScope{{Name: "ws"}}})
	fb, err := failing.BalanceGuard("ws")
	require.NoError(t, err)
	got = nil
	fb.Charge(ctx, caller, 20)
	assert.Equal(t, []seen{{"ws", "192.0.2.1", core.OutcomeFailedOpen, 20, false}}, got)
}

func TestWarnJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		load bool
		v    any
		want string
	}{
		{name: "no load", load: false, v: map[string]int{"id": 1}, want: `{"id":1}`},
		{name: "load", load: true, v: map[string]int{"id": 1}, want: `{"warning":"load","id":1}`},
		{name: "empty object", load: true, v: struct{}{}, want: `{"warning":"load"}`},
		{name: "json-rpc result", load: false, v: map[string]any{"result": core.WarnJSON(true, map[string]string{"status": "success"})}, want: `{"result":{"warning":"load","status":"success"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(core.WarnJSON(tc.load, tc.v))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(b))
		})
	}
	_, err := json.Marshal(core.WarnJSON(true, []int{1}))
	assert.ErrorContains(t, err, "JSON object")
}

func TestLoadWarningHeader(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Scopes: []core.Scope{{Name: "api", Anon: []core.Rate{core.PerMinute(10)}, User: []core.Rate{core.PerMinute(10)}}}})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	var got []string
	for range 10 {
		h := make(map[string][]string)
		g.Decide(context.Background(), anonCaller("192.0.2.1"), h)
		got = append(got, strings.Join(h[core.HeaderWarning], ","))
	}
	// 0.8 of 10: warned once fewer than 2 remain.
	assert.Equal(t, []string{"", "", "", "", "", "", "", "", "load", "load"}, got)
}
