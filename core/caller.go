package core

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// A Caller is who a request is counted against: a signed-in user, counted by
// user id whatever address they use; a caller counted by key, such as an
// API key; or an anonymous caller, counted by network address.
//
// A Caller is built only by the functions that [Limiter.Caller] also uses:
// [UserCaller], [KeyCaller], [NetworkCaller] and [Limiter.AddrCaller], so
// that no id an application or an operator types can become another kind of
// caller (a user id that reads like an API key's stays a user's). The zero
// value is the anonymous caller whose address is unknown; all such callers
// share one count. Callers compare with ==; the trust rules of
// docs/identity.md say how each is found.
type Caller struct {
	// user is the signed-in user's id, or keyPrefix and the key of a
	// caller counted by key; empty for an anonymous caller.
	user string
	// network is the anonymous caller's address, as a prefix: a /32 for
	// an IPv4 address and, by default, the /64 that holds an IPv6
	// address. The zero Prefix for a signed-in caller, or when the
	// address is unknown.
	network netip.Prefix

	// fromNet says what [Limiter.Caller] found of the request's address
	// against Config.ExemptNetworks: netUnknown (0) for a caller built
	// by hand, or by a Limiter without exempt networks, so that callers
	// compare as before.
	fromNet netTrust
}

// netTrust is what [Limiter.Caller] learned of a request's address for the
// allowlist of networks.
type netTrust int8

const (
	// netUnknown: the caller was built from an address or id alone; an
	// anonymous caller's network decides (exemptions, below).
	netUnknown netTrust = iota
	// netExempt: the request's address, read as configured, is in an
	// exempt network.
	netExempt
	// netNotExempt: the request's address is in no exempt network, or
	// could not be read as Config.NumProxies and Config.TrustedProxies
	// say (a short X-Forwarded-For): such a caller is never exempt.
	netNotExempt
)

// keyPrefix starts the id of a caller counted by key ([KeyCaller]). No
// caller of [UserCaller] has an id that starts with it: UserCaller escapes
// an id that starts with a NUL byte by adding another.
const keyPrefix = "\x00key:"

// UserCaller returns the signed-in caller of the given user id, as
// [Limiter.Caller] returns it: counted by id whatever address it uses. Any
// string is an id, kept apart byte for byte; an id that starts with a NUL
// byte gets another in front, so that no user id is ever a [KeyCaller]. An
// empty id is the zero Caller (anonymous, address unknown).
func UserCaller(id string) Caller {
	if id == "" {
		return Caller{}
	}
	if id[0] == 0 {
		// Keep the id apart from every KeyCaller.
		id = "\x00" + id
	}
	return Caller{user: id}
}

// KeyCaller returns the caller counted by key, such as an API key or a
// plan and key ("gold/" + apiKey): a caller of kind [User], with the user
// limits, whose count is its own, apart from every anonymous caller and from
// every [UserCaller], even one whose id equals key.
func KeyCaller(key string) Caller { return Caller{user: keyPrefix + key} }

// NetworkCaller returns the anonymous caller counted by network p, masked
// to its length: what [Limiter.AddrCaller] returns for an address, given
// the network its Limiter counts that address by. An IPv4-mapped p
// (::ffff:10.0.0.0/104) is the IPv4 network it maps (10.0.0.0/8), as
// addresses are counted. An invalid p is the zero Caller, whose address is
// unknown.
func NetworkCaller(p netip.Prefix) Caller {
	if !p.IsValid() {
		return Caller{}
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return Caller{network: p.Masked()}
}

// countedKey returns the key of a caller made by [KeyCaller], and whether
// it is one.
func (c Caller) countedKey() (string, bool) {
	return strings.CutPrefix(c.user, keyPrefix)
}

// User returns the id the caller is counted by when it is of kind [User]:
// the user id of a [UserCaller] (with a NUL byte added in front of one that
// started with a NUL byte), or "\x00key:" and the key of a [KeyCaller];
// empty for an anonymous caller. Stores key their counts by it.
func (c Caller) User() string { return c.user }

// Network returns the network an anonymous caller is counted by: a /32
// for an IPv4 address and, by default, the /64 that holds an IPv6
// address. It is the zero Prefix for a caller of kind [User], or when the
// address is unknown.
func (c Caller) Network() netip.Prefix { return c.network }

// Kind returns User for a signed-in caller or one counted by key,
// Anonymous otherwise.
func (c Caller) Kind() Kind {
	if c.user != "" {
		return User
	}
	return Anonymous
}

// String returns the identity the limiter counts: the user id for a
// signed-in caller; for an anonymous one, the IPv4 address, the IPv6 network
// (such as "2001:db8:1:2::/64"), or "unknown".
//
// A caller counted by key ([KeyCaller]) is written "key:" and the key.
func (c Caller) String() string {
	if k, ok := c.countedKey(); ok {
		return "key:" + k
	}
	switch {
	case c.user != "":
		return c.user
	case !c.network.IsValid():
		return "unknown"
	case c.network.Addr().Is4() && c.network.Bits() == 32, c.network.Bits() == 128:
		return c.network.Addr().String()
	}
	return c.network.String()
}

// Caller returns who made r: user, the signed-in caller the application
// found ([UserCaller] or [KeyCaller]), or for an anonymous request (user is
// the zero Caller, or any anonymous one) the caller counted by the network
// of r's address, as Config.NumProxies and Config.TrustedProxies say. Every
// adapter finds its callers so.
//
// With Config.ExemptNetworks, the caller carries whether r's address, read
// as configured, is in one of them, whatever its kind: such a Caller
// differs, compared with ==, from one built from its id or network alone.
func (l *Limiter) Caller(r *http.Request, user Caller) Caller {
	if l.exempt != nil && len(l.exempt.nets) > 0 {
		return l.exemptCaller(r, user)
	}
	if user.user != "" {
		return Caller{user: user.user}
	}
	a, _ := l.clientAddr(r)
	return Caller{network: network(a, l.bits6)}
}

// AddrCaller returns the anonymous caller the limiter counts for a client
// address: an IPv4 address (or an IPv4-mapped IPv6 one) as itself, an
// IPv6 address by its network of Config.IPv6Bits (the /64 by default), as
// [Limiter.Caller] finds it. An invalid address is the caller whose
// address is unknown. It is what [Limiter.Reset] needs to unblock an
// address.
func (l *Limiter) AddrCaller(addr netip.Addr) Caller {
	return Caller{network: network(addr.Unmap(), l.bits6)}
}

// A Key names one caller's count within a [Counter]. The [Limiter] builds
// it once per request, from the [Caller]: a signed-in caller by its id, an
// anonymous caller by its network, and an anonymous caller whose address is
// unknown by a key of its own that no network shares.
//
// An id longer than 64 bytes (maxKeyUser) is kept as "sha256:" and the 64 hex
// digits of its SHA-256 digest, so that no caller can make its count as
// large as it likes; no short id is ever a digest form, and two long ids
// share a key only if SHA-256 collides.
type Key struct {
	user  string   // signed in: the id as counted
	addr  [16]byte // anonymous: the network's first address, 16-byte form
	known bool     // anonymous: the address is known
}

// maxKeyUser is the length, in bytes, of the longest user id a [Key] keeps
// as it is.
const maxKeyUser = 64

const keyDigestPrefix = "sha256:"

// Key returns the key of c's count.
func (c Caller) Key() Key {
	if c.user != "" {
		return Key{user: keyUser(c.user)}
	}
	if !c.network.IsValid() {
		return Key{}
	}
	return Key{addr: c.network.Addr().As16(), known: true}
}

// keyUser returns the form under which a user id is counted.
func keyUser(id string) string {
	if len(id) <= maxKeyUser {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, 0, len(keyDigestPrefix)+hex.EncodedLen(len(sum)))
	b = append(b, keyDigestPrefix...)
	b = hex.AppendEncode(b, sum[:])
	return string(b)
}

// User returns the id of a signed-in caller's key, as counted, and true; or
// "" and false for an anonymous caller.
func (k Key) User() (string, bool) { return k.user, k.user != "" }

// Addr returns the first address of an anonymous caller's network, in its
// 16-byte form (an IPv4 address as ::ffff:a.b.c.d), and true; or false for a
// signed-in caller or one whose address is unknown, whose key a store must
// keep apart from every network's.
func (k Key) Addr() ([16]byte, bool) { return k.addr, k.known }

// proxyCount is Config.NumProxies as the limiter reads it: n proxies, or
// not set.
type proxyCount struct {
	n   int
	set bool
}

// proxiesOf returns the proxyCount of Config.NumProxies.
func proxiesOf(n *int) proxyCount {
	if n == nil {
		return proxyCount{}
	}
	return proxyCount{n: *n, set: true}
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
func clientAddr(remoteAddr string, forwardedFor []string, proxies proxyCount, trusted Networks) (a netip.Addr, asConfigured bool) {
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

// The allowlists: Config.ExemptNetworks and Config.ExemptUsers.

// validateUsers reports ids that no caller of [Limiter.Caller] can have.
func validateUsers(ids []string) error {
	var errs []error
	for i, id := range ids {
		if id == "" || id[0] == 0 {
			errs = append(errs, fmt.Errorf("ExemptUsers[%d] %q: want a user id, not empty and not starting with a NUL byte", i, id))
		}
	}
	return errors.Join(errs...)
}

// exemptions are the allowlists of a Limiter, built once by [New]; a
// Limiter without allowlists has none (nil), so that a decision checks
// for them in one branch.
type exemptions struct {
	nets  Networks
	users map[string]struct{}
}

// newExemptions returns the allowlists of cfg, or nil if it has none.
func newExemptions(cfg *Config) *exemptions {
	if len(cfg.ExemptNetworks) == 0 && len(cfg.ExemptUsers) == 0 {
		return nil
	}
	e := &exemptions{nets: slices.Clone(cfg.ExemptNetworks)}
	if len(cfg.ExemptUsers) > 0 {
		e.users = make(map[string]struct{}, len(cfg.ExemptUsers))
		for _, id := range cfg.ExemptUsers {
			e.users[id] = struct{}{}
		}
	}
	return e
}

// match reports whether c is exempt: [Limiter.Caller] found the request's
// address, read as configured, in an exempt network; it is an exempt user;
// or it was built from its network alone ([Limiter.AddrCaller],
// [NetworkCaller]) and that network lies in an exempt network. A caller
// whose address could not be read as Config.NumProxies and
// Config.TrustedProxies say is never exempt by network: the address it
// fell back to is a proxy's, and the proxies' networks are often the
// networks an operator exempts.
func (e *exemptions) match(c Caller) bool {
	switch c.fromNet {
	case netExempt:
		return true
	case netNotExempt:
		if c.user == "" {
			return false
		}
	}
	if c.user != "" {
		_, ok := e.users[c.user]
		return ok
	}
	if !c.network.IsValid() {
		return false
	}
	for _, p := range e.nets {
		if p.Bits() <= c.network.Bits() && p.Contains(c.network.Addr()) {
			return true
		}
	}
	return false
}

// Exempt reports whether c is on the allowlists (Config.ExemptNetworks,
// Config.ExemptUsers), as a decision of the Limiter finds it: for a limit
// kept beside the Limiter (package balance), which serves an exempt caller
// uncounted as the Limiter does.
func (l *Limiter) Exempt(c Caller) bool {
	return l.exempt != nil && l.exempt.match(c)
}

// exemptCaller is [Limiter.Caller] for a limiter with exempt networks: the
// request's address is found for every kind of caller, and the caller
// carries whether it is in one of them; an address that could not be read
// as configured is in none.
func (l *Limiter) exemptCaller(r *http.Request, user Caller) Caller {
	a, asConfigured := l.clientAddr(r)
	c := Caller{user: user.user}
	if c.user == "" {
		c.network = network(a, l.bits6)
	}
	c.fromNet = netNotExempt
	if asConfigured && a.IsValid() && l.exempt.nets.contains(a) {
		c.fromNet = netExempt
	}
	return c
}

// clientAddr returns the address of r's caller, as Config.NumProxies and
// Config.TrustedProxies say, and whether it could be read so (see
// clientAddr).
func (l *Limiter) clientAddr(r *http.Request) (netip.Addr, bool) {
	var forwarded []string
	if l.proxies.n > 0 || len(l.trusted) > 0 {
		forwarded = r.Header["X-Forwarded-For"]
	}
	return clientAddr(r.RemoteAddr, forwarded, l.proxies, l.trusted)
}

// exemptDecision fills d with the decision on a request by an exempt
// caller in s: allowed, not counted, no headers.
func exemptDecision(d *Decision, s *scopeLimits, caller Caller, cost int64) {
	d.Scope, d.Caller, d.Cost = s.name, caller, cost
	d.Allowed, d.Outcome = true, OutcomeExempt
}
