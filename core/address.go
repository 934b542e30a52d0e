package core

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// A ProxyCount is how many reverse proxies stand between the callers and the
// application, and so which X-Forwarded-For entry to trust. The zero value
// means "not set": the peer address is used and the [checks] warning W601
// fires. Build a set value with [Proxies]; Proxies(0) says there is no proxy.
//
// [checks]: https://pkg.go.dev/github.com/ratescope/ratescope/checks
type ProxyCount struct {
	n   int
	set bool
}

// Proxies returns a ProxyCount of n proxies. n = 0 means no proxy: the peer
// address is the caller's. A negative n is treated as unset.
func Proxies(n int) ProxyCount {
	if n < 0 {
		return ProxyCount{}
	}
	return ProxyCount{n: n, set: true}
}

// IsSet reports whether the number of proxies was given.
func (p ProxyCount) IsSet() bool { return p.set }

// N returns the number of proxies; 0 when unset.
func (p ProxyCount) N() int { return p.n }

// String returns the number, or "unset".
func (p ProxyCount) String() string {
	if !p.set {
		return "unset"
	}
	return strconv.Itoa(p.n)
}

// clientAddr returns the address an anonymous caller is counted by: the
// peer address (remoteAddr), or an entry of the X-Forwarded-For lines read
// from the right as proxies and trusted say (docs/identity.md states the
// rules). Without networks it takes the proxies-th entry from the right;
// with networks it reads the header only from a trusted peer, walks it from
// the right past trusted entries, and stops at the proxies-th entry at the
// latest. Ports, brackets and an IPv6 zone are dropped; IPv4-mapped
// addresses are returned as IPv4; the result is the zero Addr if the peer
// is no address either.
//
// asConfigured is false when the address fell back to a proxy's (the peer,
// or the last trusted entry) because the header had too few entries, an
// entry that is no address, or only trusted entries: the caller is counted
// by it but never exempt by network.
func clientAddr(remoteAddr string, forwardedFor []string, proxies ProxyCount, trusted Networks) (a netip.Addr, asConfigured bool) {
	peer, _ := parseHostAddr(remoteAddr)
	if len(trusted) == 0 {
		if proxies.n > 0 {
			if a, ok := forwardedEntry(forwardedFor, proxies.n); ok {
				return a, true
			}
			return peer, false // fewer entries than proxies, or not an address
		}
		return peer, true
	}
	if !peer.IsValid() || !trusted.contains(peer) || (proxies.set && proxies.n == 0) {
		return peer, true
	}
	limit := proxies.n // 0: no limit but the networks
	caller, walked, found := peer, 0, false
	walkForwarded(forwardedFor, func(entry string) bool {
		a, ok := parseHostAddr(entry)
		if !ok {
			return false
		}
		caller = a
		walked++
		found = !trusted.contains(a) || walked == limit
		return !found
	})
	return caller, found
}

// forwardedEntry returns the n-th entry from the right of the list made by
// joining lines with commas.
func forwardedEntry(lines []string, n int) (a netip.Addr, ok bool) {
	walkForwarded(lines, func(entry string) bool {
		n--
		if n == 0 {
			a, ok = parseHostAddr(entry)
			return false
		}
		return true
	})
	return a, ok
}

// walkForwarded calls visit with each entry of the list made by joining
// lines with commas, from the right, until visit returns false.
func walkForwarded(lines []string, visit func(entry string) bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for {
			j := strings.LastIndexByte(line, ',')
			if !visit(line[j+1:]) {
				return
			}
			if j < 0 {
				break
			}
			line = line[:j]
		}
	}
}

// parseHostAddr reads an address written as "ip", "ip:port", "[ip]" or
// "[ip]:port", with spaces around it and an optional IPv6 zone.
func parseHostAddr(s string) (netip.Addr, bool) {
	if a, ok := parseIPv4Port(s); ok {
		return a, true
	}
	return parseAnyHostAddr(s)
}

// parseAnyHostAddr is parseHostAddr without the fast path for IPv4.
func parseAnyHostAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Addr{}, false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		rest := s[end+1:]
		if rest != "" && !isPort(rest) {
			return netip.Addr{}, false
		}
		s = s[1:end]
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.IndexByte(s, ':') == i {
		// One colon: an IPv4 address with a port.
		if !isPort(s[i:]) {
			return netip.Addr{}, false
		}
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// parseIPv4Port reads the common form of a peer address, "a.b.c.d" or
// "a.b.c.d:port", with nothing around it, without the general parser: four
// decimal fields of at most 255 with no leading zero, then optionally ":"
// and 1 to 5 digits. It reports false for anything else, which
// parseHostAddr then reads the general way; whatever it accepts, the
// general way reads as the same address (FuzzParseIPv4Port checks it).
func parseIPv4Port(s string) (netip.Addr, bool) {
	// One pass over the bytes, each read once: the four fields into ip,
	// then the port's digits. The bounds and the per-field rules are
	// plain comparisons, so that the common case costs a few dozen
	// instructions (it is on every anonymous request's path).
	var ip [4]byte
	i, n := 0, len(s)
	for field := 0; ; field++ {
		if i >= n || s[i] < '0' || s[i] > '9' {
			return netip.Addr{}, false
		}
		v := uint(s[i] - '0')
		start := i
		i++
		for i < n && s[i] >= '0' && s[i] <= '9' {
			if i-start == 3 || v == 0 {
				return netip.Addr{}, false // a fourth digit, or a leading zero
			}
			v = v*10 + uint(s[i]-'0')
			i++
		}
		if v > 255 {
			return netip.Addr{}, false
		}
		ip[field] = byte(v)
		if field == 3 {
			break
		}
		if i >= n || s[i] != '.' {
			return netip.Addr{}, false
		}
		i++
	}
	if i < n && !isPort(s[i:]) {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(ip), true
}

// isPort reports whether s is ":" followed by 1 to 5 digits.
func isPort(s string) bool {
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// network returns the prefix an anonymous caller at a is counted by: a /32
// for IPv4, a /bits6 for IPv6. The zero Prefix for the zero Addr.
func network(a netip.Addr, bits6 int) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	if a.Is4() {
		return netip.PrefixFrom(a, 32) // the whole address: nothing to mask
	}
	p, _ := a.Prefix(bits6)
	return p
}

// Networks is a list of networks, such as [Config.TrustedProxies]. Its
// text form is comma-separated networks in CIDR notation or single
// addresses ("10.0.0.0/8, 192.0.2.7"); an address alone is a network of
// that one address. A []netip.Prefix converts to it.
type Networks []netip.Prefix

// contains reports whether a is in one of the networks. An IPv4-mapped
// IPv6 address is read as IPv4.
func (n Networks) contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range n {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// validate reports networks of TrustedProxies that are not valid.
func (n Networks) validate() error { return n.validateAs("TrustedProxies") }

// validateAs reports networks that are not valid, naming them as entries
// of the setting field.
func (n Networks) validateAs(field string) error {
	var errs []error
	for i, p := range n {
		switch {
		case !p.IsValid():
			errs = append(errs, fmt.Errorf("%s[%d]: not a valid network", field, i))
		case p.Addr().Is4In6():
			// Addresses are unmapped before they are looked up, so the
			// mapped form never matches ([ParseNetworks] unmaps it).
			if u, ok := unmapPrefix(p); ok {
				errs = append(errs, fmt.Errorf("%s[%d] %s: an IPv4-mapped network never matches; write it as %s", field, i, p, u.Masked()))
			} else {
				errs = append(errs, fmt.Errorf("%s[%d] %s: an IPv4-mapped network never matches, and one of fewer than 96 bits maps no IPv4 network", field, i, p))
			}
		}
	}
	return errors.Join(errs...)
}

// unmapPrefix returns p, and true, when p is not IPv4-mapped; the IPv4
// network an IPv4-mapped p maps (::ffff:10.0.0.0/104 is 10.0.0.0/8), and
// true; or false for an IPv4-mapped p of fewer than 96 bits, which maps
// no IPv4 network.
func unmapPrefix(p netip.Prefix) (netip.Prefix, bool) {
	if !p.Addr().Is4In6() {
		return p, true
	}
	if p.Bits() < 96 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96), true
}
