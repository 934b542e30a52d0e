package core

import (
	"net/http"
	"net/netip"
	"strings"
)

// A Caller is who a request is counted against: a signed-in user, counted by
// user id whatever address they use, or an anonymous caller, counted by
// network address. The zero value is an anonymous caller whose address is
// unknown; all such callers share one count.
type Caller struct {
	// User is the signed-in user's id; empty for an anonymous caller. Any
	// string is a valid id: stores keep ids apart byte for byte.
	User string
	// Network is the anonymous caller's address, as a prefix: a /32 for an
	// IPv4 address and, by default, the /64 that holds an IPv6 address.
	// It is the zero Prefix for a signed-in caller, or when the address is
	// unknown.
	Network netip.Prefix

	// exempt records that [Limiter.Caller] found the request's address in
	// Config.ExemptNetworks. It is never set without exempt networks, so
	// that callers compare as before.
	exempt bool
}

// keyPrefix starts the User of a caller counted by key ([KeyCaller]). No
// user id that [Limiter.Caller] returns starts with it: Limiter.Caller
// escapes an id that starts with a NUL byte by adding another.
const keyPrefix = "\x00key:"

// KeyCaller returns the caller counted by key, such as an API key or a
// plan and key ("gold/" + apiKey): a caller of kind [User], with the user
// limits, whose count is its own, apart from every anonymous caller and from
// every user id that [Limiter.Caller] returns, even one equal to key.
func KeyCaller(key string) Caller { return Caller{User: keyPrefix + key} }

// countedKey returns the key of a caller made by [KeyCaller], and whether
// it is one.
func (c Caller) countedKey() (string, bool) {
	return strings.CutPrefix(c.User, keyPrefix)
}

// Kind returns User for a signed-in caller, Anonymous otherwise.
func (c Caller) Kind() Kind {
	if c.User != "" {
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
	case c.User != "":
		return c.User
	case !c.Network.IsValid():
		return "unknown"
	case c.Network.Addr().Is4() && c.Network.Bits() == 32, c.Network.Bits() == 128:
		return c.Network.Addr().String()
	}
	return c.Network.String()
}

// Caller returns who made r, as the application knows it: the caller
// counted by key if key is not empty ([KeyCaller]: an API key, a plan and
// key), otherwise the signed-in user if user is not empty, otherwise an
// anonymous caller counted by the network of its address (as
// Config.NumProxies and Config.TrustedProxies say, then the IPv6 prefix).
// A user id that starts with a NUL byte gets another in front, so that no
// user id is ever a [KeyCaller]. Every adapter finds its callers so.
//
// With Config.ExemptNetworks, the request's address is found for every
// kind of caller, and a caller whose address is in one of them is marked
// exempt (see [Config.ExemptNetworks]): such a Caller differs, compared
// with ==, from one built by hand.
func (l *Limiter) Caller(r *http.Request, key, user string) Caller {
	if l.exempt != nil && len(l.exempt.nets) > 0 {
		return l.exemptCaller(r, key, user)
	}
	if key != "" {
		return KeyCaller(key)
	}
	if user != "" {
		return userCaller(user)
	}
	var forwarded []string
	if l.proxies.n > 0 || len(l.trusted) > 0 {
		forwarded = r.Header["X-Forwarded-For"]
	}
	a := clientAddr(r.RemoteAddr, forwarded, l.proxies, l.trusted)
	return Caller{Network: network(a, l.bits6)}
}

// userCaller returns the signed-in caller of id user, not empty.
func userCaller(user string) Caller {
	if user[0] == 0 {
		// Keep the id apart from every KeyCaller.
		user = "\x00" + user
	}
	return Caller{User: user}
}
