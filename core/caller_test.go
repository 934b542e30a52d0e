package core_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

var clientAddrCases = []struct {
	name    string
	remote  string
	xff     []string
	proxies *int
	want    string // "" for the zero Addr
}{
	{name: "unset uses peer", remote: "203.0.113.9:5555", xff: []string{"198.51.100.1"}, want: "203.0.113.9"},
	{name: "zero uses peer", remote: "203.0.113.9:5555", xff: []string{"198.51.100.1"}, proxies: new(0), want: "203.0.113.9"},
	{name: "one proxy takes last entry", remote: "10.0.0.2:80", xff: []string{"198.51.100.1"}, proxies: new(1), want: "198.51.100.1"},
	{name: "spoofed entries to the left are ignored", remote: "10.0.0.2:80", xff: []string{"1.1.1.1, 2.2.2.2, 198.51.100.1"}, proxies: new(1), want: "198.51.100.1"},
	{name: "two proxies take second from right", remote: "10.0.0.3:80", xff: []string{"6.6.6.6, 198.51.100.1, 10.0.0.2"}, proxies: new(2), want: "198.51.100.1"},
	{name: "several header lines are one list", remote: "10.0.0.3:80", xff: []string{"6.6.6.6, 7.7.7.7", "198.51.100.1", "10.0.0.2"}, proxies: new(2), want: "198.51.100.1"},
	{name: "several header lines, entry in first line", remote: "10.0.0.3:80", xff: []string{"6.6.6.6, 198.51.100.1", "10.0.0.2"}, proxies: new(2), want: "198.51.100.1"},
	{name: "fewer entries than proxies", remote: "10.0.0.3:80", xff: []string{"198.51.100.1"}, proxies: new(2), want: "10.0.0.3"},
	{name: "no header behind proxy", remote: "10.0.0.3:80", proxies: new(1), want: "10.0.0.3"},
	{name: "empty header", remote: "10.0.0.3:80", xff: []string{""}, proxies: new(1), want: "10.0.0.3"},
	{name: "empty entry", remote: "10.0.0.3:80", xff: []string{"198.51.100.1, "}, proxies: new(1), want: "10.0.0.3"},
	{name: "garbage entry", remote: "10.0.0.3:80", xff: []string{"unknown"}, proxies: new(1), want: "10.0.0.3"},
	{name: "obfuscated identifier", remote: "10.0.0.3:80", xff: []string{"_hidden"}, proxies: new(1), want: "10.0.0.3"},
	{name: "hostname entry", remote: "10.0.0.3:80", xff: []string{"example.com"}, proxies: new(1), want: "10.0.0.3"},
	{name: "garbage to the left is ignored", remote: "10.0.0.3:80", xff: []string{"<script>,,;; , 198.51.100.1"}, proxies: new(1), want: "198.51.100.1"},
	{name: "ipv4 with port", remote: "10.0.0.3:80", xff: []string{"198.51.100.1:4711"}, proxies: new(1), want: "198.51.100.1"},
	{name: "ipv4 with bad port", remote: "10.0.0.3:80", xff: []string{"198.51.100.1:http"}, proxies: new(1), want: "10.0.0.3"},
	{name: "ipv6", remote: "10.0.0.3:80", xff: []string{"2001:db8::1"}, proxies: new(1), want: "2001:db8::1"},
	{name: "ipv6 brackets", remote: "10.0.0.3:80", xff: []string{"[2001:db8::1]"}, proxies: new(1), want: "2001:db8::1"},
	{name: "ipv6 brackets and port", remote: "10.0.0.3:80", xff: []string{"[2001:db8::1]:443"}, proxies: new(1), want: "2001:db8::1"},
	{name: "ipv6 zone", remote: "10.0.0.3:80", xff: []string{"fe80::1%eth0"}, proxies: new(1), want: "fe80::1"},
	{name: "ipv6 zone in brackets", remote: "10.0.0.3:80", xff: []string{"[fe80::1%25eth0]:80"}, proxies: new(1), want: "fe80::1"},
	{name: "ipv6 bad bracket", remote: "10.0.0.3:80", xff: []string{"[2001:db8::1"}, proxies: new(1), want: "10.0.0.3"},
	{name: "ipv6 junk after bracket", remote: "10.0.0.3:80", xff: []string{"[2001:db8::1]x"}, proxies: new(1), want: "10.0.0.3"},
	{name: "ipv4-mapped is ipv4", remote: "10.0.0.3:80", xff: []string{"::ffff:198.51.100.1"}, proxies: new(1), want: "198.51.100.1"},
	{name: "spaces and tabs", remote: "10.0.0.3:80", xff: []string{" 1.2.3.4 ,\t198.51.100.1\t"}, proxies: new(1), want: "198.51.100.1"},
	{name: "peer ipv6 with port", remote: "[2001:db8::7]:5555", want: "2001:db8::7"},
	{name: "peer without port", remote: "203.0.113.9", want: "203.0.113.9"},
	{name: "peer garbage", remote: "pipe", want: ""},
	{name: "peer empty", remote: "", want: ""},
	{name: "peer garbage behind proxy with bad entry", remote: "@", xff: []string{"nope"}, proxies: new(1), want: ""},
	{name: "huge count", remote: "10.0.0.3:80", xff: []string{"1.1.1.1"}, proxies: new(1 << 30), want: "10.0.0.3"},
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range clientAddrCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := core.ClientAddr(tc.remote, tc.xff, tc.proxies)
			if tc.want == "" {
				assert.False(t, got.IsValid(), "got %s", got)
				return
			}
			assert.Equal(t, netip.MustParseAddr(tc.want), got)
		})
	}
}

// TestNumProxies checks that a negative number of proxies fails at
// startup, naming the setting, and that the limiter keeps its own copy of
// the number: changing the caller's variable later changes nothing.
func TestNumProxies(t *testing.T) {
	t.Parallel()
	_, err := core.New(core.Config{Store: memstore.New(memstore.Config{SweepInterval: -1}), NumProxies: new(-1)})
	var ce *core.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ratescope.E003", ce.ID)
	assert.ErrorContains(t, err, "NumProxies -1")

	n := 1
	lim := newLimiter(t, core.Config{NumProxies: &n})
	n = 0
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "203.0.113.5")
	assert.Equal(t, "203.0.113.5", lim.Caller(r, core.Caller{}).String())
	assert.Equal(t, 1, *lim.Config().NumProxies)
	*lim.Config().NumProxies = 0
	assert.Equal(t, 1, *lim.Config().NumProxies, "Config returns a copy")
}

func TestLimiterCaller(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{NumProxies: new(1)})
	for _, tc := range []struct {
		name, remote, xff, user, want string
		kind                          core.Kind
	}{
		{name: "ipv4", remote: "10.0.0.1:1", xff: "203.0.113.5", want: "203.0.113.5"},
		{name: "ipv6 grouped by /64", remote: "10.0.0.1:1", xff: "2001:db8:1:2:aaaa::1", want: "2001:db8:1:2::/64"},
		{name: "signed in ignores address", remote: "10.0.0.1:1", xff: "203.0.113.5", user: "alice", want: "alice", kind: core.User},
		{name: "unknown address", remote: "pipe", want: "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			c := lim.Caller(r, core.UserCaller(tc.user))
			assert.Equal(t, tc.want, c.String())
			assert.Equal(t, tc.kind, c.Kind())
		})
	}

	// Rotating addresses inside one /64 keeps one count; another /64 is
	// another caller.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "[2001:db8:1:2::1]:1"
	a := newLimiter(t, core.Config{NumProxies: new(0)}).Caller(r, core.Caller{})
	r.RemoteAddr = "[2001:db8:1:2:ffff:ffff:ffff:ffff]:1"
	b := newLimiter(t, core.Config{NumProxies: new(0)}).Caller(r, core.Caller{})
	assert.Equal(t, a, b)
	r.RemoteAddr = "[2001:db8:1:3::1]:1"
	c := newLimiter(t, core.Config{NumProxies: new(0)}).Caller(r, core.Caller{})
	assert.NotEqual(t, a, c)
	assert.NotEqual(t, a.Network(), c.Network())

	// The prefix length is configurable.
	r.RemoteAddr = "[2001:db8:1:3::1]:1"
	full := newLimiter(t, core.Config{NumProxies: new(0), IPv6Bits: 128}).Caller(r, core.Caller{})
	assert.Equal(t, "2001:db8:1:3::1", full.String())
}

// proxyN is the number of proxies of p, 0 when p is nil.
func proxyN(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func FuzzClientAddr(f *testing.F) {
	for _, tc := range clientAddrCases {
		f.Add(tc.remote, strings.Join(tc.xff, "\n"), "6.6.6.6, 7.7.7.7", proxyN(tc.proxies))
	}
	f.Fuzz(func(t *testing.T, remote, xff, spoof string, n int) {
		n = n % 8
		var lines []string
		if xff != "" {
			lines = strings.Split(xff, "\n")
		}
		p := new(n)
		got := core.ClientAddr(remote, lines, p)
		peer := core.ClientAddr(remote, nil, new(0))
		if got != peer {
			// Any address other than the peer's is an entry the
			// proxies wrote, which only exists behind proxies.
			assert.Positive(t, n)
			assert.True(t, got.IsValid())
		}
		if got.IsValid() {
			assert.Empty(t, got.Zone(), "zones are dropped")
			assert.False(t, got.Is4In6(), "IPv4-mapped addresses are unmapped")
		}
		entries := 0
		for _, l := range lines {
			entries += strings.Count(l, ",") + 1
		}
		if n > 0 && entries >= n {
			// What a caller writes to the left cannot move its count.
			spoofed := append([]string{spoof}, lines...)
			assert.Equal(t, got, core.ClientAddr(remote, spoofed, p), "spoof %q before %q", spoof, lines)
		}
	})
}
