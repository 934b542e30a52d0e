package core_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// An IPv4-mapped network is read as the IPv4 network it maps: every address
// is unmapped before it is looked up, so the mapped form would never match.
func TestParseNetworksMapped(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   string
		want string
		err  string
	}{
		{name: "a /104 is a /8", in: "::ffff:10.0.0.0/104", want: "10.0.0.0/8"},
		{name: "a /128 is a /32", in: "::ffff:10.0.0.1/128", want: "10.0.0.1/32"},
		{name: "a /96 is every IPv4 address", in: "::ffff:0.0.0.0/96", want: "0.0.0.0/0"},
		{name: "masked as it is unmapped", in: "::ffff:127.0.0.1/104", want: "127.0.0.0/8"},
		{name: "a mapped address alone", in: "::ffff:192.0.2.7", want: "192.0.2.7/32"},
		{name: "IPv6 is kept", in: "2001:db8::/32", want: "2001:db8::/32"},
		{name: "shorter than 96 bits", in: "::ffff:10.0.0.0/90", err: `network "::ffff:10.0.0.0/90": an IPv4-mapped network is written with 96 bits or more`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := core.ParseNetworks(tt.in)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, n.String())
		})
	}
}

// A mapped network set in the Config itself, not through ParseNetworks, is
// refused with an error that names its IPv4 form.
func TestMappedNetworksInConfig(t *testing.T) {
	t.Parallel()
	_, err := core.New(core.Config{
		Store:          memstore.New(memstore.Config{SweepInterval: -1}),
		TrustedProxies: core.Networks{netip.MustParsePrefix("::ffff:127.0.0.0/104")},
		ExemptNetworks: core.Networks{netip.MustParsePrefix("::ffff:127.0.0.1/128")},
	})
	require.Error(t, err)
	assert.ErrorContains(t, err, "TrustedProxies[0] ::ffff:127.0.0.0/104: an IPv4-mapped network never matches; write it as 127.0.0.0/8")
	assert.ErrorContains(t, err, "ExemptNetworks[0] ::ffff:127.0.0.1/128: an IPv4-mapped network never matches; write it as 127.0.0.1/32")
}

// The portal's -trusted-proxies ::ffff:127.0.0.0/104 and -exempt-networks
// ::ffff:127.0.0.1/128: the clients behind the proxy are counted apart, and
// the exempt address is exempt.
func TestMappedNetworksMatch(t *testing.T) {
	t.Parallel()
	trusted, err := core.ParseNetworks("::ffff:127.0.0.0/104")
	require.NoError(t, err)
	exempt, err := core.ParseNetworks("::ffff:127.0.0.1/128")
	require.NoError(t, err)
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.5:1234"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	lim := newLimiter(t, core.Config{TrustedProxies: trusted})
	assert.Equal(t, "198.51.100.7", lim.Caller(r, core.Caller{}).String(), "read through the trusted proxy")

	lim = newLimiter(t, core.Config{NumProxies: new(0), ExemptNetworks: exempt})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: core.DefaultScope, Cost: 1})
	require.NoError(t, err)
	r.RemoteAddr = "127.0.0.1:1234"
	d := g.Decide(context.Background(), lim.Caller(r, core.Caller{}), http.Header{})
	assert.Equal(t, core.OutcomeExempt, d.Outcome)
}

// FuzzParseNetworks checks that every network ParseNetworks accepts can
// match an address: none is IPv4-mapped, each is masked, and an address
// it holds is found in the list, mapped or not.
func FuzzParseNetworks(f *testing.F) {
	for _, s := range []string{"::ffff:10.0.0.0/104", "::ffff:10.0.0.1/128", "10.0.0.0/8, 2001:db8::/32", "::ffff:1.2.3.4", "::/0", "::ffff:0:0/95"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := core.ParseNetworks(s)
		if err != nil {
			return
		}
		for _, p := range n {
			if p.Addr().Is4In6() {
				t.Fatalf("%q gave the IPv4-mapped network %s, which never matches", s, p)
			}
			if p != p.Masked() {
				t.Fatalf("%q gave %s, not masked", s, p)
			}
			if !n.Contains(p.Addr()) {
				t.Fatalf("%q: %s is not found in its own network", s, p.Addr())
			}
			if p.Addr().Is4() && !n.Contains(netip.AddrFrom16(p.Addr().As16())) {
				t.Fatalf("%q: %s written IPv4-mapped is not found", s, p.Addr())
			}
		}
	})
}

// A RateTable flag whose variable holds a default (flag.TextVar): a given
// flag replaces the default, and a typo shows its own error, not "given
// twice".
func TestRateTableFlagOverDefault(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want core.RateTable
		err  string
		// hides is what the error must not say.
		hides string
	}{
		{name: "replaces the default", args: []string{"-rates", "api.anon=30/min"}, want: core.RateTable{"api.anon": "30/min"}},
		{name: "typo", args: []string{"-rates", "api.anon=60/minn"}, err: `unknown unit "minn"`, hides: "given twice"},
		{name: "the later flag wins", args: []string{"-rates", "api.anon=1/s", "-rates", "api.anon=2/s api.user=3/s"}, want: core.RateTable{"api.anon": "2/s", "api.user": "3/s"}},
		{name: "twice in one flag", args: []string{"-rates", "api.anon=1/s api.anon=2/s"}, err: "api.anon given twice"},
		{name: "no flag keeps the default", want: core.RateTable{"api.anon": "60/min", "api.user": "600/min"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			table := core.RateTable{"api.anon": "60/min", "api.user": "600/min"}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.TextVar(&table, "rates", table, "")
			err := fs.Parse(tt.args)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				if tt.hides != "" {
					assert.NotContains(t, err.Error(), tt.hides)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, table)
		})
	}
}

// A setting's text form is a string in JSON too: the object, the array and
// the number that were second spellings are refused with an error that
// names the type. A YAML mapping of rates is the table's own map: core.New
// checks its rates, as it checks any Config.Rates.
func TestTextFormOnlyInJSONAndYAML(t *testing.T) {
	t.Parallel()
	var cfg struct {
		Rates      core.RateTable `json:"rates" yaml:"rates"`
		NumProxies *int           `json:"num_proxies"`
		Trusted    core.Networks  `json:"trusted"`
	}
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"rates": {"api.anon": "7/min"}}`), &cfg), "core.RateTable")
	require.NoError(t, json.Unmarshal([]byte(`{"num_proxies": 2}`), &cfg))
	assert.Equal(t, new(2), cfg.NumProxies, "a number of proxies is a JSON number")
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"trusted": ["10.0.0.0/8"]}`), &cfg), "core.Networks")
	require.NoError(t, yaml.Unmarshal([]byte("rates:\n  api.anon: 7/mn\n"), &cfg))
	_, err := core.New(core.Config{Store: memstore.New(memstore.Config{SweepInterval: -1}), Rates: cfg.Rates})
	assert.ErrorContains(t, err, `ratescope.E001: rate key "api.anon"`)
}
