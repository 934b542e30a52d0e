package core

import (
	"net/http"
	"net/netip"
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
	// anonymous caller's network decides (allowlist.go).
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
