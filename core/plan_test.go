package core_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

func TestPlanConfigErrors(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	for _, tc := range []struct {
		name  string
		rates map[string]string
		plans map[string][]core.Rate // Plans of the "api" scope
		wants []string
	}{
		{name: "other periods", rates: map[string]string{"api.user@gold": "600/min,100000/hour"},
			wants: []string{`api.user@gold: its periods (min,hour) are not those of api.user (min,day)`, "give api.user@gold one rate over each period of api.user, e.g. 6000/min,200000/day"}},
		{name: "fewer periods", rates: map[string]string{"api.user@gold": "600/min"},
			wants: []string{`api.user@gold: its periods (min)`}},
		{name: "anonymous plan", rates: map[string]string{"api.anon@gold": "600/min,100000/day"},
			wants: []string{`rate key "api.anon@gold": plans are for signed-in users only`, "use api.user@gold"}},
		{name: "bad plan name", rates: map[string]string{"api.user@Gold": "600/min,100000/day"},
			wants: []string{`plan name "Gold"`, "lower-case letters"}},
		{name: "no plan name", rates: map[string]string{"api.user@": "600/min,100000/day"},
			wants: []string{`plan name ""`}},
		{name: "unknown scope", rates: map[string]string{"apii.user@gold": "600/min,100000/day"},
			wants: []string{`rate key "apii.user@gold" names no known scope`}},
		{name: "bad rate", rates: map[string]string{"api.user@gold": "600/mn,100000/day"},
			wants: []string{`rate key "api.user@gold"`, `"600/mn"`}},
		{name: "periods of the user rates the key sets", rates: map[string]string{"api.user": "10/min,50/hour", "api.user@gold": "600/min,100000/day"},
			wants: []string{"not those of api.user (min,hour)"}},
		{name: "bad plan in Scopes", plans: map[string][]core.Rate{"Gold!": {core.PerMinute(600), core.PerDay(100000)}},
			wants: []string{`plan name "Gold!"`}},
		{name: "other periods in Scopes", plans: map[string][]core.Rate{"gold": {core.PerMinute(600)}},
			wants: []string{"api.user@gold: its periods (min)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := core.Config{Store: store, Rates: tc.rates}
			if tc.plans != nil {
				s := core.DefaultScopes()
				s[0].Plans = tc.plans
				cfg.Scopes = s
			}
			err := cfg.Validate()
			require.Error(t, err)
			for _, want := range tc.wants {
				assert.Contains(t, err.Error(), want)
			}
			var ce *core.ConfigError
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, "ratescope.E001", ce.ID)
			_, err = core.New(cfg)
			assert.Error(t, err)
		})
	}
}

func TestPlansInConfig(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Rates: map[string]string{
		"api.user@gold":   "100000/day,600/min", // any order: put in api.user's
		"api.user@silver": "100/min,30000/day",
	}})
	assert.Equal(t, []string{"gold", "silver"}, lim.Plans("api"))
	assert.Empty(t, lim.Plans("nope"))
	cfg := lim.Config()
	require.Len(t, cfg.Scopes, 1)
	assert.Equal(t, map[string][]core.Rate{
		"gold":   {core.PerMinute(600), core.PerDay(100000)},
		"silver": {core.PerMinute(100), core.PerDay(30000)},
	}, cfg.Scopes[0].Plans)
	cfg.Scopes[0].Plans["gold"][0] = core.PerMinute(1)
	assert.Equal(t, core.PerMinute(600), lim.Config().Scopes[0].Plans["gold"][0], "Config returns a copy")
	assert.Empty(t, newLimiter(t, core.Config{}).Plans("api"))
}

// parseTable reads s as a flag or a JSON string would.
func parseTable(s string) (core.RateTable, error) {
	var t core.RateTable
	err := t.UnmarshalText([]byte(s))
	return t, err
}

func TestParseRateTablePlans(t *testing.T) {
	t.Parallel()
	table, err := parseTable("api.user=60/min,1000/day api.user@gold=600/min,100000/day")
	require.NoError(t, err)
	assert.Equal(t, core.RateTable{"api.user": "60/min,1000/day", "api.user@gold": "600/min,100000/day"}, table)
	assert.Equal(t, "api.user=60/min,1000/day api.user@gold=600/min,100000/day", table.String())
	for _, tc := range []struct {
		name, text, want string
	}{
		{"anonymous", "api.anon@gold=1/min", "plans are for signed-in users only"},
		{"bad name", "api.user@go.ld=1/min", `plan name "go.ld"`},
		{"no kind", "api@gold=1/min", `"api" is not SCOPE.user`},
		{"no rate", "api.user@gold=", "no rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseTable(tc.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// planLimiter is a limiter with api.user 5/min,1000/day and two plans,
// gold (wide counters) and silver, on a fake clock, logging to log.
func planLimiter(t *testing.T, clock *storetest.Clock, log *bytes.Buffer) *core.Limiter {
	t.Helper()
	return newLimiter(t, core.Config{
		Rates: map[string]string{
			"api.user":        "5/min,1000/day",
			"api.user@gold":   "100000/min,1000000/day",
			"api.user@silver": "8/min,1000/day",
		},
		Now:    clock.Now,
		Logger: slog.New(slog.NewTextHandler(log, nil)),
	})
}

func TestForPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start)
	var log bytes.Buffer
	lim := planLimiter(t, clock, &log)
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	alice := core.UserCaller("alice")
	decide := func(plan string, caller core.Caller) (core.Decision, http.Header) {
		t.Helper()
		var d core.Decision
		h := http.Header{}
		g.ForPlan(plan).DecideInto(ctx, &d, caller, "", h)
		return d, h
	}

	for range 5 {
		d, h := decide("", alice)
		require.True(t, d.Allowed)
		assert.Equal(t, `"api.user.min";q=5;w=60, "api.user.day";q=1000;w=86400`, h.Get("Ratelimit-Policy"))
		assert.Empty(t, d.Plan())
	}
	d, _ := decide("", alice)
	require.False(t, d.Allowed, "the base rates: 5/min")

	d, h := decide("gold", alice)
	require.True(t, d.Allowed, "gold has room")
	assert.Equal(t, "gold", d.Plan())
	assert.Equal(t, `"api.user.min";q=100000;w=60, "api.user.day";q=1000000;w=86400`, h.Get("Ratelimit-Policy"), "the plan's limits, under the scope's names")
	assert.Equal(t, `"api.user.min";r=99994, "api.user.day";r=999994`, h.Get("Ratelimit"), "the count kept from the base rates")

	d, h = decide("silver", alice)
	require.True(t, d.Allowed)
	assert.Equal(t, "silver", d.Plan())
	assert.Equal(t, `"api.user.min";r=1, "api.user.day";r=993`, h.Get("Ratelimit"))

	d, _ = decide("", alice)
	assert.False(t, d.Allowed, "back to the base rates, over 5/min")

	// An anonymous caller gets the anonymous rates whatever the plan.
	d, h = decide("gold", anonCaller("192.0.2.1"))
	require.True(t, d.Allowed)
	assert.Empty(t, d.Plan())
	assert.Equal(t, `"api.anon.min";q=60;w=60, "api.anon.day";q=1000;w=86400`, h.Get("Ratelimit-Policy"))

	// An unknown plan gets the base rates, and a warning at most once
	// per ErrorLogInterval (10s).
	bob := core.UserCaller("bob")
	for range 3 {
		d, h = decide("platinum", bob)
		require.True(t, d.Allowed)
		assert.Empty(t, d.Plan())
		assert.Equal(t, `"api.user.min";q=5;w=60, "api.user.day";q=1000;w=86400`, h.Get("Ratelimit-Policy"))
	}
	assert.Equal(t, 1, strings.Count(log.String(), "unknown plan"), log.String())
	assert.Contains(t, log.String(), "plan=platinum")
	assert.Contains(t, log.String(), `known="gold, silver"`)
	clock.Advance(10 * time.Second)
	decide("platinum", bob)
	assert.Equal(t, 2, strings.Count(log.String(), "unknown plan"))
	assert.Contains(t, log.String(), "suppressed=2")

	assert.Same(t, g, g.ForPlan(""), "the scope's own rates")
	assert.Same(t, g, g.ForPlan("gold").ForPlan(""))
	assert.Same(t, g.ForPlan("gold"), g.ForPlan("silver").ForPlan("gold"))
}

func TestForPlanWithoutPlans(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	lim := newLimiter(t, core.Config{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	assert.Same(t, g, g.ForPlan(""))
	assert.Same(t, g, g.ForPlan("gold"), "an unknown plan: the scope's rates")
	assert.Contains(t, log.String(), `known=none`)
}

func TestForPlanCosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start)
	var log bytes.Buffer
	lim := planLimiter(t, clock, &log)
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 7})
	require.NoError(t, err)
	assert.Contains(t, log.String(), "kind=user", "7 is above api.user's 5/min")
	assert.NotContains(t, log.String(), "plan=silver", "7 fits silver's 8/min")
	g, err = g.ForPlan("silver").WithRouteCosts(map[string]int64{"/big": 9})
	require.NoError(t, err)
	assert.Contains(t, log.String(), "plan=silver", "9 is above silver's 8/min")
	alice := core.UserCaller("alice")
	var d core.Decision
	g.DecideInto(ctx, &d, alice, "", http.Header{})
	assert.Equal(t, "silver", d.Plan(), "WithRouteCosts on a plan's Guard returns the plan's")
	assert.Equal(t, int64(7), d.Cost)
	g.ForPlan("gold").DecideInto(ctx, &d, alice, "/big", http.Header{})
	assert.Equal(t, int64(9), d.Cost, "gold's limits fit 9")
	g.ForPlan("silver").DecideInto(ctx, &d, core.UserCaller("bob"), "/big", http.Header{})
	assert.Equal(t, int64(8), d.Cost, "clamped to silver's 8/min")
	g.ForPlan("").DecideInto(ctx, &d, core.UserCaller("carol"), "/big", http.Header{})
	assert.Equal(t, int64(5), d.Cost, "clamped to api.user's 5/min")
}

// FuzzParseRateTable: RateTable.UnmarshalText never panics, and a table it reads
// reads back the same from its String, plan keys included.
func FuzzParseRateTable(f *testing.F) {
	for _, s := range []string{
		"api.anon=60/min,1000/day api.user=600/min",
		"api.user@gold=600/min,100000/day",
		"api.anon@gold=1/min", "api.user@=1/min", "api.user@a@b=1/min", "@=", "a.user@Gold=1/s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		table, err := parseTable(s)
		if err != nil {
			return
		}
		again, err := parseTable(table.String())
		require.NoError(t, err, "String of %q: %q", s, table.String())
		assert.Equal(t, table, again)
		for key := range table {
			if _, plan, ok := strings.Cut(key, "@"); ok {
				assert.NotEmpty(t, plan, key)
				assert.NotContains(t, plan, "@", key)
			}
		}
	})
}
