package core_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// seen collects the outcomes Config.Observe receives.
type seen struct {
	mu       sync.Mutex
	outcomes []core.Outcome
}

func (s *seen) observe(_ context.Context, e core.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes = append(s.outcomes, e.Outcome)
}

func TestExemptNetworksAndUsers(t *testing.T) {
	t.Parallel()
	office := core.Networks{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:1::/48")}
	tests := []struct {
		name       string
		remoteAddr string
		forwarded  string
		key, user  string
		exempt     bool
	}{
		{name: "anonymous in the office", remoteAddr: "10.0.0.1:1234", forwarded: "198.51.100.7", exempt: true},
		{name: "anonymous outside", remoteAddr: "10.0.0.1:1234", forwarded: "192.0.2.1"},
		{name: "IPv6 in the office", remoteAddr: "10.0.0.1:1234", forwarded: "2001:db8:1:2::5", exempt: true},
		{name: "IPv6 outside", remoteAddr: "10.0.0.1:1234", forwarded: "2001:db8:2::5"},
		{name: "signed in from the office", remoteAddr: "10.0.0.1:1234", forwarded: "198.51.100.7", user: "alice", exempt: true},
		{name: "signed in from outside", remoteAddr: "10.0.0.1:1234", forwarded: "192.0.2.1", user: "alice"},
		{name: "key from the office", remoteAddr: "10.0.0.1:1234", forwarded: "198.51.100.7", key: "k1", exempt: true},
		{name: "exempt user from anywhere", remoteAddr: "10.0.0.1:1234", forwarded: "192.0.2.1", user: "monitor", exempt: true},
		{name: "exempt user without the proxy's entry", remoteAddr: "192.0.2.1:1234", user: "monitor", exempt: true},
		{name: "exempt user's id as a key is not exempt", remoteAddr: "10.0.0.1:1234", forwarded: "192.0.2.1", key: "monitor"},
		{name: "from the office without the proxy's entry is not exempt", remoteAddr: "198.51.100.7:1234"},
		{name: "signed in from the office without the proxy's entry is not exempt", remoteAddr: "198.51.100.7:1234", user: "alice"},
		{name: "the proxy's entry counts, not the peer", remoteAddr: "198.51.100.1:1234", forwarded: "192.0.2.1"},
		{name: "behind the proxy, from the office", remoteAddr: "10.0.0.1:1234", forwarded: "198.51.100.9", exempt: true},
		{name: "forged entry before the proxy's", remoteAddr: "10.0.0.1:1234", forwarded: "198.51.100.9, 192.0.2.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var obs seen
			lim := newLimiter(t, core.Config{
				Rates:          map[string]string{"api.anon": "1/min,10/day", "api.user": "1/min,10/day"},
				NumProxies:     new(1),
				ExemptNetworks: office,
				ExemptUsers:    []string{"monitor"},
				Observe:        obs.observe,
			})
			g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			require.NoError(t, err)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remoteAddr
			if tt.forwarded != "" {
				r.Header.Set("X-Forwarded-For", tt.forwarded)
			}
			var user core.Caller
			switch {
			case tt.key != "":
				user = core.KeyCaller(tt.key)
			case tt.user != "":
				user = core.UserCaller(tt.user)
			}
			caller := lim.Caller(r, user)
			want := core.OutcomeAllowed
			if tt.exempt {
				want = core.OutcomeExempt
			}
			for i := range 5 {
				h := http.Header{}
				d := g.Decide(context.Background(), caller, h)
				if tt.exempt {
					assert.True(t, d.Allowed, "request %d", i+1)
					assert.Equal(t, core.OutcomeExempt, d.Outcome)
					assert.False(t, d.Checked, "not counted")
					assert.Empty(t, h, "no RateLimit headers")
				} else if i > 0 {
					assert.False(t, d.Allowed, "request %d over 1/min", i+1)
				}
			}
			assert.Equal(t, want, obs.outcomes[0], "observed")
			assert.Len(t, obs.outcomes, 5, "every decision observed")
		})
	}
}

func TestExemptAnonymousCallerBuiltByHand(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{
		Rates:          map[string]string{"api.anon": "1/min,10/day"},
		ExemptNetworks: core.Networks{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/32")},
	})
	for _, tt := range []struct {
		name   string
		caller core.Caller
		exempt bool
	}{
		{name: "IPv4 inside", caller: anonCaller("198.51.100.7"), exempt: true},
		{name: "IPv4 outside", caller: anonCaller("192.0.2.7")},
		{name: "IPv6 /64 inside", caller: core.NetworkCaller(netip.MustParsePrefix("2001:db8:1:2::/64")), exempt: true},
		{name: "IPv6 network wider than the exempt one", caller: core.NetworkCaller(netip.MustParsePrefix("2001:d00::/24"))},
		{name: "unknown address", caller: core.Caller{}},
	} {
		d, err := lim.Allow(context.Background(), "api", tt.caller)
		require.NoError(t, err)
		d2, err := lim.Allow(context.Background(), "api", tt.caller)
		require.NoError(t, err)
		assert.Equal(t, tt.exempt, d.Outcome == core.OutcomeExempt, tt.name)
		assert.Equal(t, tt.exempt, d2.Allowed, "%s: the second request within the minute", tt.name)
	}
}

func TestExemptCallerUnchangedWithoutNetworks(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{ExemptUsers: []string{"monitor"}})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	assert.Equal(t, core.UserCaller("alice"), lim.Caller(r, core.UserCaller("alice")), "no exempt networks: a caller compares as before")
}

func TestExemptConfigErrors(t *testing.T) {
	t.Parallel()
	_, err := core.New(core.Config{Store: failingStore{}, ExemptNetworks: core.Networks{{}}, ExemptUsers: []string{"", "\x00key:x"}})
	require.Error(t, err)
	assert.ErrorContains(t, err, "ratescope.E005: ExemptNetworks[0]: not a valid network")
	assert.ErrorContains(t, err, `ExemptUsers[0] ""`)
	assert.ErrorContains(t, err, `ExemptUsers[1] "\x00key:x"`)
}

func TestAllowlistConfigIsACopy(t *testing.T) {
	t.Parallel()
	nets := core.Networks{netip.MustParsePrefix("198.51.100.0/24")}
	users := []string{"monitor"}
	lim := newLimiter(t, core.Config{ExemptNetworks: nets, ExemptUsers: users})
	nets[0], users[0] = netip.MustParsePrefix("192.0.2.0/24"), "alice"
	got := lim.Config()
	assert.Equal(t, core.Networks{netip.MustParsePrefix("198.51.100.0/24")}, got.ExemptNetworks)
	assert.Equal(t, []string{"monitor"}, got.ExemptUsers)
	got.ExemptUsers[0] = "bob"
	assert.Equal(t, []string{"monitor"}, lim.Config().ExemptUsers, "Config returns a copy")
	d, err := lim.Allow(context.Background(), "api", core.UserCaller("monitor"))
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeExempt, d.Outcome)
}

// TestShortForwardedForIsNeverExempt is the first defect of issue 30: a
// request whose X-Forwarded-For has fewer entries than NumProxies says
// (a client that bypassed the outer proxy) is counted by the inner
// proxy's address, which lies in the exempt network; it must be counted,
// never exempt.
func TestShortForwardedForIsNeverExempt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		cfg       core.Config
		forwarded string
	}{
		{name: "NumProxies 2, one entry", cfg: core.Config{NumProxies: new(2)}, forwarded: "198.51.100.7"},
		{name: "NumProxies 2, no header", cfg: core.Config{NumProxies: new(2)}},
		{name: "NumProxies 1, not an address", cfg: core.Config{NumProxies: new(1)}, forwarded: "unknown"},
		{name: "trusted networks, every entry a proxy", cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("10.0.0.0/8")}}, forwarded: "10.0.0.9"},
		{name: "trusted networks, no header", cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("10.0.0.0/8")}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.Rates = map[string]string{"api.anon": "1/min,10/day", "api.user": "1/min,10/day"}
			cfg.ExemptNetworks = core.Networks{netip.MustParsePrefix("10.0.0.0/8")}
			lim := newLimiter(t, cfg)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "10.0.0.2:40000" // the inner proxy
			if tt.forwarded != "" {
				r.Header.Set("X-Forwarded-For", tt.forwarded)
			}
			for _, user := range []string{"", "alice"} {
				caller := lim.Caller(r, core.UserCaller(user))
				var allowed int
				for range 5 {
					d, err := lim.Allow(context.Background(), "api", caller)
					require.NoError(t, err)
					assert.NotEqual(t, core.OutcomeExempt, d.Outcome, "user %q", user)
					if d.Allowed {
						allowed++
					}
				}
				assert.Equal(t, 1, allowed, "user %q: 1 of 5 under 1/min", user)
			}
		})
	}
}
