package core

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
)

// This file holds the allowlists: Config.ExemptNetworks and
// Config.ExemptUsers.

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
