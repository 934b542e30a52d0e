package core_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
)

// TestFieldsParse reads every field SetHeaders writes with a parser of
// structured field values (RFC 9651), and checks each value against the
// RateLimit header fields draft as docs/headers.md pins it: RateLimit-Policy
// and RateLimit are Lists of String Items with non-negative Integer
// parameters (q and w, r and t), a RateLimit item names a policy of
// RateLimit-Policy, Retry-After is never earlier than a t nor longer than
// the period of the limit that refused, and violated-policies names the
// limits that have a t.
func TestFieldsParse(t *testing.T) {
	t.Parallel()
	type step struct {
		caller core.Caller
		plan   string
		cost   int64
		wait   time.Duration // before the request
	}
	alice := core.UserCaller("alice")
	ip := anonCaller("192.0.2.9")
	repeat := func(n int, s step) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		cfg   core.Config
		steps []step
		// want are the fields the last response carries.
		want []string
	}{
		{name: "allowed, one limit", cfg: core.Config{Rates: core.RateTable{"api.anon": "5/min"}},
			steps: repeat(1, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy"}},
		{name: "allowed, two limits", cfg: core.Config{Rates: core.RateTable{"api.anon": "5/min,100/day"}},
			steps: repeat(2, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy"}},
		{name: "allowed, last unit", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min,100/day"}},
			steps: repeat(2, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Ratescope-Warning"}},
		{name: "refused by one limit", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min,100/day"}},
			steps: repeat(3, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
		{name: "refused later in the window", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min,100/day"}},
			steps: append(repeat(2, step{caller: ip}), step{caller: ip, wait: 17*time.Second + time.Millisecond}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
		{name: "refused by every limit", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/sec,2/min,2/hour"}},
			steps: repeat(3, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
		{name: "refused by the longer limit", cfg: core.Config{Rates: core.RateTable{"api.anon": "3/sec,4/hour"}},
			steps: append(repeat(3, step{caller: ip}), step{caller: ip, wait: 2 * time.Second}, step{caller: ip}, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
		{name: "refused at a cost", cfg: core.Config{Rates: core.RateTable{"api.anon": "10/min"}},
			steps: []step{{caller: ip, cost: 7}, {caller: ip, cost: 7}}, want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After"}},
		{name: "a plan", cfg: core.Config{Rates: core.RateTable{"api.user": "3/min,1000/day", "api.user@gold": "10/min,100000/day"}},
			steps: []step{{caller: alice}, {caller: alice, plan: "gold"}}, want: []string{"Ratelimit", "Ratelimit-Policy"}},
		{name: "a plan, refused", cfg: core.Config{Rates: core.RateTable{"api.user": "3/min,1000/day", "api.user@gold": "4/min,100000/day"}},
			steps: repeat(5, step{caller: alice, plan: "gold"}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
		{name: "legacy fields", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min,100/day"}, LegacyHeaders: true},
			steps: repeat(3, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Ratescope-Warning"}},
		{name: "load warning", cfg: core.Config{Rates: core.RateTable{"api.anon": "10/min"}},
			steps: repeat(9, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Ratescope-Warning"}},
		{name: "load warning, refused", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min"}},
			steps: repeat(3, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
		{name: "shadow", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min,100/day"}, Scopes: shadowAPI()},
			steps: repeat(3, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Ratescope-Warning"}},
		{name: "refusals only, refused", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min"}, Headers: core.HeadersRefused},
			steps: repeat(3, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
		{name: "none, refused", cfg: core.Config{Rates: core.RateTable{"api.anon": "2/min"}, Headers: core.HeadersNone},
			steps: repeat(3, step{caller: ip}), want: []string{"Retry-After"}},
		{name: "failed closed", cfg: core.Config{Store: errorStore{err: breakerOpen{wait: 2500 * time.Millisecond}}, Scopes: failClosedAPI()},
			steps: repeat(1, step{caller: ip}), want: []string{"Retry-After"}},
		{name: "long names", cfg: core.Config{Rates: core.RateTable{"a-very-long.scope_name.for-a-big-api.anon": "7/sec,60/min,1000/hour,10000/day"},
			Scopes: []core.Scope{{Name: "a-very-long.scope_name.for-a-big-api", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}}}},
			steps: repeat(8, step{caller: ip}), want: []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Ratescope-Warning"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := storetest.NewClock(storetest.Start)
			cfg := tt.cfg
			cfg.Now = clock.Now
			cfg.Logger = slog.New(slog.DiscardHandler)
			lim := newLimiter(t, cfg)
			scope := core.DefaultScope
			if len(cfg.Scopes) > 0 {
				scope = cfg.Scopes[0].Name
			}
			var d *core.Decision
			h := http.Header{}
			for _, s := range tt.steps {
				clock.Advance(s.wait)
				cost := max(s.cost, 1)
				g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: scope, Cost: cost})
				require.NoError(t, err)
				var ticket core.Ticket
				h = http.Header{}
				g.Check(context.Background(), &ticket, core.Call{Caller: s.caller, Plan: s.plan, Header: h})
				d = ticket.Decision()
			}
			names := make([]string, 0, len(h))
			for k := range h {
				names = append(names, k)
			}
			assert.ElementsMatch(t, tt.want, names, "the fields written")
			checkFields(t, h, d)
		})
	}
}

// checkFields parses each field of h, which d's SetHeaders wrote, and
// checks it against the draft.
func checkFields(t *testing.T, h http.Header, d *core.Decision) {
	t.Helper()
	policies := map[string]int64{} // name: w
	if v := h.Values("Ratelimit-Policy"); len(v) > 0 {
		list, err := httpsfv.UnmarshalList(v)
		require.NoError(t, err, "RateLimit-Policy: %q", v)
		require.NotEmpty(t, list, "RateLimit-Policy is a non-empty List")
		for _, m := range list {
			item, ok := m.(httpsfv.Item)
			require.True(t, ok, "RateLimit-Policy member %v is an Item", m)
			name, ok := item.Value.(string)
			require.True(t, ok, "RateLimit-Policy: the policy name %v is a String", item.Value)
			q := intParam(t, item, "q", true)
			assert.GreaterOrEqual(t, q, int64(0), "%s: q", name)
			w := intParam(t, item, "w", false)
			assert.Positive(t, w, "%s: w is non-zero", name)
			onlyParams(t, item, "q", "w")
			policies[name] = w
		}
	}
	ts := map[string]int64{} // name: t
	if v := h.Values("Ratelimit"); len(v) > 0 {
		list, err := httpsfv.UnmarshalList(v)
		require.NoError(t, err, "RateLimit: %q", v)
		require.Len(t, list, len(policies), "a RateLimit item for each policy")
		for _, m := range list {
			item, ok := m.(httpsfv.Item)
			require.True(t, ok, "RateLimit member %v is an Item", m)
			name, ok := item.Value.(string)
			require.True(t, ok, "RateLimit: the policy name %v is a String", item.Value)
			assert.Contains(t, policies, name, "RateLimit names a policy of RateLimit-Policy")
			assert.GreaterOrEqual(t, intParam(t, item, "r", true), int64(0), "%s: r", name)
			if _, ok := item.Params.Get("t"); ok {
				tv := intParam(t, item, "t", true)
				assert.Positive(t, tv, "%s: t of a limit without room", name)
				assert.LessOrEqual(t, tv, policies[name], "%s: t within the window", name)
				ts[name] = tv
			}
			onlyParams(t, item, "r", "t")
		}
	}
	if v := h.Values("Retry-After"); len(v) > 0 {
		item, err := httpsfv.UnmarshalItem(v)
		require.NoError(t, err, "Retry-After: %q", v)
		secs, ok := item.Value.(int64)
		require.True(t, ok, "Retry-After %q is delay-seconds", v)
		assert.GreaterOrEqual(t, secs, int64(1))
		assert.Equal(t, d.Problem().RetryAfter, secs)
		for name, tv := range ts {
			assert.GreaterOrEqual(t, secs, tv, "Retry-After is not earlier than the t of %s", name)
		}
		if st, ok := d.Refusing(); ok && len(policies) > 0 {
			assert.LessOrEqual(t, secs, int64(st.Rate.Period/time.Second), "Retry-After is no longer than the period of the limit that refused")
			assert.Contains(t, ts, strings.Trim(policyOf(t, h, st.Rate), `"`), "the limit that refused has a t")
		}
	} else {
		assert.True(t, d.Allowed, "a refusal carries Retry-After")
	}
	if v := h.Values("Ratescope-Warning"); len(v) > 0 {
		item, err := httpsfv.UnmarshalItem(v)
		require.NoError(t, err, "Ratescope-Warning: %q", v)
		assert.Equal(t, httpsfv.Token("load"), item.Value)
	}
	for _, k := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
		if v := h.Values(k); len(v) > 0 {
			item, err := httpsfv.UnmarshalItem(v)
			require.NoError(t, err, "%s: %q", k, v)
			n, ok := item.Value.(int64)
			require.True(t, ok, "%s %q is an Integer", k, v)
			assert.GreaterOrEqual(t, n, int64(0), k)
		}
	}
	if !d.Allowed && d.Status() == http.StatusTooManyRequests {
		b, err := json.Marshal(d.Problem())
		require.NoError(t, err)
		var p struct {
			Type     string   `json:"type"`
			Violated []string `json:"violated-policies"`
		}
		require.NoError(t, json.Unmarshal(b, &p))
		assert.Equal(t, "https://iana.org/assignments/http-problem-types#quota-exceeded", p.Type)
		require.NotEmpty(t, p.Violated, "violated-policies: %s", b)
		if len(ts) > 0 {
			for _, name := range p.Violated {
				assert.Contains(t, ts, name, "a violated policy is a limit with a t")
			}
			assert.Len(t, p.Violated, len(ts))
		}
	}
}

// intParam returns the Integer parameter key of item, failing when it is
// another type, or missing though required.
func intParam(t *testing.T, item httpsfv.Item, key string, required bool) int64 {
	t.Helper()
	v, ok := item.Params.Get(key)
	if !ok {
		if required {
			t.Errorf("%v: no %s", item.Value, key)
		}
		return 0
	}
	n, ok := v.(int64)
	require.True(t, ok, "%v: %s=%v is an Integer", item.Value, key, v)
	return n
}

// onlyParams checks that item has no parameters but keys.
func onlyParams(t *testing.T, item httpsfv.Item, keys ...string) {
	t.Helper()
	for _, k := range item.Params.Names() {
		assert.Contains(t, keys, k, "%v: parameter %s", item.Value, k)
	}
}

// policyOf returns the name RateLimit-Policy gives the limit of rate r.
func policyOf(t *testing.T, h http.Header, r core.Rate) string {
	t.Helper()
	list, err := httpsfv.UnmarshalList(h.Values("Ratelimit-Policy"))
	require.NoError(t, err)
	for _, m := range list {
		item := m.(httpsfv.Item)
		if intParam(t, item, "q", true) == r.Limit && intParam(t, item, "w", false) == int64(r.Period/time.Second) {
			return item.Value.(string)
		}
	}
	t.Fatalf("no policy of %s in %q", r, h.Values("Ratelimit-Policy"))
	return ""
}
