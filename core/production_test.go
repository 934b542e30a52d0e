package core_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ratescope/ratescope/core"
)

func TestOutcomeStrings(t *testing.T) {
	t.Parallel()
	var names []string
	for _, o := range core.Outcomes() {
		names = append(names, o.String())
	}
	assert.Equal(t, []string{"allowed", "denied", "failed_open", "exempt", "shadow", "failed_closed", "reset", "local"}, names)
	assert.Equal(t, "none", core.OutcomeNone.String())
	assert.Equal(t, "none", core.Outcome(200).String())
}

func TestObserveAllowN(t *testing.T) {
	t.Parallel()
	var seen []core.Event
	var decisions []core.Decision
	lim := newLimiter(t, core.Config{
		Rates: map[string]string{"api.anon": "1/min,10/day"},
		Observe: func(_ context.Context, e core.Event) {
			seen = append(seen, e)
			decisions = append(decisions, *e.Decision)
		},
	})
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	d, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome)
	d, err = lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome)
	st, ok := d.Refusing()
	require.True(t, ok)
	assert.Equal(t, core.PerMinute(1), st.Rate)
	_, err = lim.Allow(ctx, "nope", ip)
	require.Error(t, err)

	require.Len(t, seen, 2, "an error is no decision and is not observed")
	assert.Equal(t, core.OutcomeAllowed, decisions[0].Outcome)
	assert.Equal(t, core.OutcomeDenied, decisions[1].Outcome)
	assert.Equal(t, "api", decisions[1].Scope)
	assert.Equal(t, ip, decisions[1].Caller)
	for _, e := range seen {
		assert.Positive(t, e.Duration, "the duration is measured when the hook is set")
	}
}

func TestShadowScopes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  core.Config
	}{
		{name: "Scope.Shadow", cfg: core.Config{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.Scopes = []core.Scope{
				{Name: "api", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}},
				{Name: "new", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}, Shadow: true},
			}
			cfg.Logger = discard()
			lim := newLimiter(t, cfg)
			ctx := context.Background()
			ip := anonCaller("192.0.2.1")
			for i, want := range []core.Outcome{core.OutcomeAllowed, core.OutcomeShadow, core.OutcomeShadow} {
				d, err := lim.Allow(ctx, "new", ip)
				require.NoError(t, err)
				assert.Equal(t, want, d.Outcome, "request %d", i+1)
				assert.True(t, d.Allowed)
				assert.Zero(t, d.Problem().RetryAfter, "served: no Retry-After")
				assert.Equal(t, int64(0), d.Limits()[0].Remaining)
			}
			for _, want := range []core.Outcome{core.OutcomeAllowed, core.OutcomeDenied} {
				d, err := lim.Allow(ctx, "api", ip)
				require.NoError(t, err)
				assert.Equal(t, want, d.Outcome, "the other scope is enforced")
			}
			var shadow []string
			for _, s := range lim.Config().Scopes {
				if s.Shadow {
					shadow = append(shadow, s.Name)
				}
			}
			assert.Equal(t, []string{"new"}, shadow, "Config reports the scopes in shadow mode")
		})
	}
}

func TestHeaderValuesDoNotShareRoom(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "1/min,5/day"}})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	for _, allowed := range []bool{true, false} {
		h := http.Header{}
		var d core.Decision
		g.DecideInto(context.Background(), &d, anonCaller("192.0.2.7"), "", h)
		require.Equal(t, allowed, d.Allowed)
		want := h.Clone()
		// Adding a value to each field in turn must not change another.
		for name := range want {
			h.Add(name, "added")
			want[name] = append(want[name], "added")
			assert.Equal(t, want, h, "after adding to %s", name)
		}
	}
}

func TestTrustedClientAddr(t *testing.T) {
	t.Parallel()
	trusted := core.Networks{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
	for _, tt := range []struct {
		name      string
		peer      string
		forwarded []string
		proxies   *int
		want      string
		// configured: the address was read as the settings say, not
		// fallen back to a proxy's (such a caller is never exempt).
		configured bool
	}{
		{name: "peer outside: header ignored", peer: "203.0.113.1:1", forwarded: []string{"198.51.100.1"}, want: "203.0.113.1", configured: true},
		{name: "peer outside even with NumProxies", peer: "203.0.113.1:1", forwarded: []string{"198.51.100.1"}, proxies: new(1), want: "203.0.113.1", configured: true},
		{name: "one proxy", peer: "10.0.0.1:1", forwarded: []string{"6.6.6.6, 198.51.100.1"}, want: "198.51.100.1", configured: true},
		{name: "proxies skipped", peer: "10.0.0.1:1", forwarded: []string{"6.6.6.6, 198.51.100.1, 10.1.1.1", "10.2.2.2"}, want: "198.51.100.1", configured: true},
		{name: "NumProxies stops the walk", peer: "10.0.0.1:1", forwarded: []string{"198.51.100.1, 10.1.1.1, 10.2.2.2"}, proxies: new(2), want: "10.1.1.1", configured: true},
		{name: "NumProxies 0 reads no header", peer: "10.0.0.1:1", forwarded: []string{"198.51.100.1"}, proxies: new(0), want: "10.0.0.1", configured: true},
		{name: "all trusted: the leftmost", peer: "10.0.0.1:1", forwarded: []string{"10.9.9.9, 10.1.1.1"}, want: "10.9.9.9"},
		{name: "not an address: the last trusted", peer: "10.0.0.1:1", forwarded: []string{"garbage, 10.1.1.1"}, want: "10.1.1.1"},
		{name: "no header", peer: "10.0.0.1:1", want: "10.0.0.1"},
		{name: "IPv6 proxy", peer: "[2001:db8::1]:443", forwarded: []string{"[2001:db8::2]:1, 198.51.100.4"}, want: "198.51.100.4", configured: true},
		{name: "IPv4-mapped peer", peer: "[::ffff:10.0.0.1]:1", forwarded: []string{"198.51.100.5"}, want: "198.51.100.5", configured: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, configured := core.TrustedClientAddr(tt.peer, tt.forwarded, tt.proxies, trusted)
			assert.Equal(t, tt.want, got.String())
			assert.Equal(t, tt.configured, configured, "read as configured")
		})
	}
	got, _ := core.TrustedClientAddr("10.0.0.1:1", []string{"a, 198.51.100.1"}, new(1), nil)
	assert.Equal(t, core.ClientAddr("10.0.0.1:1", []string{"a, 198.51.100.1"}, new(1)), got, "no networks: ClientAddr")
}

func TestKeyCallersApartFromUsers(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	key := core.KeyCaller("x")
	k, ok := key.CountedKey()
	assert.True(t, ok)
	assert.Equal(t, "x", k)
	assert.Equal(t, core.User, key.Kind())
	for _, id := range []string{"x", "key:x", "\x00key:x", "\x00"} {
		c := lim.Caller(r, core.UserCaller(id))
		assert.NotEqual(t, key, c, "user id %q", id)
		_, ok := c.CountedKey()
		assert.False(t, ok, "user id %q is no key", id)
	}
	assert.NotEqual(t, lim.Caller(r, core.UserCaller("\x00a")), lim.Caller(r, core.UserCaller("\x00\x00a")), "escaping keeps ids apart")
	assert.Equal(t, key, lim.Caller(r, core.KeyCaller("x")), "a key is counted as itself")
	assert.Equal(t, core.UserCaller("alice"), lim.Caller(r, core.UserCaller("alice")))
}

func TestRateTable(t *testing.T) {
	t.Parallel()
	var tab core.RateTable
	require.NoError(t, tab.UnmarshalText([]byte(" api.anon=3/min,100/day  autocomplete.project.user=10/min ")))
	assert.Equal(t, core.RateTable{"api.anon": "3/min,100/day", "autocomplete.project.user": "10/min"}, tab)
	assert.Equal(t, "api.anon=3/min,100/day autocomplete.project.user=10/min", tab.String())

	bad := tab
	err := bad.UnmarshalText([]byte("api.anon=3/minuets api.user api.anon=1/s x.other=1/s"))
	require.Error(t, err)
	for _, want := range []string{`"api.anon=3/minuets"`, `unknown unit "minuets"`, `"api.user": no rate`, `key "x.other" is not SCOPE.anon or SCOPE.user`} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, tab, bad, "left as it was")
	assert.ErrorContains(t, bad.UnmarshalText([]byte("api.anon=1/s api.anon=2/s")), "api.anon given twice")

	// A flag replaces the table its variable held, as flag.TextVar does.
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fromFlag := core.RateTable{"api.user": "600/min"}
	fs.TextVar(&fromFlag, "rates", fromFlag, "")
	require.NoError(t, fs.Parse([]string{"-rates", "api.anon=1/s api.user=2/s"}))
	assert.Equal(t, core.RateTable{"api.anon": "1/s", "api.user": "2/s"}, fromFlag)
	err = fs.Parse([]string{"-rates", "api.anon=60/minn"})
	assert.ErrorContains(t, err, `unknown unit "minn"`)

	// JSON and YAML read the same text, from a string.
	var cfg struct {
		Rates core.RateTable `json:"rates" yaml:"rates"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"rates": "api.anon=1/s"}`), &cfg))
	assert.Equal(t, core.RateTable{"api.anon": "1/s"}, cfg.Rates)
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"rates": "api.user=5/mn"}`), &cfg), `"api.user=5/mn"`)
	require.NoError(t, yaml.Unmarshal([]byte("rates: api.anon=1/s api.user=2/s\n"), &cfg))
	assert.Equal(t, core.RateTable{"api.anon": "1/s", "api.user": "2/s"}, cfg.Rates)
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.JSONEq(t, `{"rates": "api.anon=1/s api.user=2/s"}`, string(out))

	lim := newLimiter(t, core.Config{Rates: tab, Scopes: []core.Scope{
		core.DefaultScopes()[0],
		{Name: "autocomplete.project", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}},
	}})
	assert.Equal(t, []core.Rate{core.PerMinute(3), core.PerDay(100)}, lim.Config().Scopes[0].Anon)
}

// The number of proxies is a plain number in JSON and YAML, and null (or
// left out) for unset; core.New rejects a negative one (TestNumProxies).
func TestNumProxiesText(t *testing.T) {
	t.Parallel()
	type conf struct {
		NumProxies *int `json:"num_proxies" yaml:"num_proxies"`
	}
	for _, tt := range []struct {
		name string
		json string
		yaml string
		want *int
	}{
		{name: "one", json: `{"num_proxies": 1}`, yaml: "num_proxies: 1", want: new(1)},
		{name: "zero", json: `{"num_proxies": 0}`, yaml: "num_proxies: 0", want: new(0)},
		{name: "unset", json: `{"num_proxies": null}`, yaml: "num_proxies: null", want: nil},
		{name: "left out", json: `{}`, yaml: "{}", want: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var j, y conf
			require.NoError(t, json.Unmarshal([]byte(tt.json), &j))
			assert.Equal(t, tt.want, j.NumProxies, "JSON")
			require.NoError(t, yaml.Unmarshal([]byte(tt.yaml), &y))
			assert.Equal(t, tt.want, y.NumProxies, "YAML")
			out, err := json.Marshal(j)
			require.NoError(t, err)
			var back conf
			require.NoError(t, json.Unmarshal(out, &back))
			assert.Equal(t, tt.want, back.NumProxies, "round trip through %s", out)
		})
	}
	var c conf
	assert.Error(t, json.Unmarshal([]byte(`{"num_proxies": "two"}`), &c))
	assert.Error(t, yaml.Unmarshal([]byte(`num_proxies: two`), &c))
}

func TestRateAndNetworksText(t *testing.T) {
	t.Parallel()
	var c struct {
		Rate    core.Rate     `json:"rate" yaml:"rate"`
		Trusted core.Networks `json:"trusted" yaml:"trusted"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"rate": "100/15m", "trusted": "10.0.0.0/8, 192.0.2.7"}`), &c))
	assert.Equal(t, core.Rate{Limit: 100, Period: 15 * 60e9}, c.Rate)
	want := core.Networks{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}
	assert.Equal(t, want, c.Trusted)
	require.NoError(t, yaml.Unmarshal([]byte("rate: 60/min\ntrusted: 10.0.0.0/8,192.0.2.7\n"), &c))
	assert.Equal(t, core.PerMinute(60), c.Rate)
	assert.Equal(t, want, c.Trusted)
	out, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"rate": "60/min", "trusted": "10.0.0.0/8,192.0.2.7/32"}`, string(out))
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"rate": "60/mn"}`), &c), `"60/mn"`)

	_, err = core.ParseNetworks("10.0.0.0/8, nope, 10.0.0.0/99")
	require.Error(t, err)
	assert.ErrorContains(t, err, `network "nope"`)
	assert.ErrorContains(t, err, `network "10.0.0.0/99"`)
	n, err := core.ParseNetworks("10.1.2.3/8")
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.0/8", n.String(), "masked")
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func FuzzTrustedClientAddr(f *testing.F) {
	f.Add("10.0.0.1:1", "6.6.6.6, 198.51.100.1, 10.1.1.1", 0)
	f.Add("203.0.113.1:1", "198.51.100.1", 1)
	f.Add("[2001:db8::1]:443", "garbage, 10.1.1.1", 2)
	trusted := core.Networks{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
	f.Fuzz(func(t *testing.T, remote, xff string, n int) {
		var lines []string
		if xff != "" {
			lines = strings.Split(xff, "\n")
		}
		var p *int
		if n%4 > 0 {
			p = new(n % 4)
		}
		got, configured := core.TrustedClientAddr(remote, lines, p, trusted)
		peer := core.ClientAddr(remote, nil, new(0))
		if !trusted.Contains(peer) {
			// A peer outside the networks chooses nothing.
			assert.Equal(t, peer, got)
			assert.True(t, configured, "a peer outside the networks is the caller")
			return
		}
		if !configured {
			// Fallen back: the address is a proxy's, never somebody new.
			assert.True(t, got == peer || trusted.Contains(got), "fell back to %v, not a proxy's address", got)
		}
		if got != peer {
			assert.True(t, got.IsValid())
			assert.Empty(t, got.Zone())
			assert.False(t, got.Is4In6())
		}
		// What a caller writes to the left of the first untrusted entry
		// cannot move its count.
		if !trusted.Contains(got) {
			spoofed := append([]string{"6.6.6.6, 7.7.7.7"}, lines...)
			again, _ := core.TrustedClientAddr(remote, spoofed, p, trusted)
			assert.Equal(t, got, again, "spoof before %q", lines)
		}
	})
}
