package core

import (
	"context"
	"net/http"
	"net/netip"
)

// This file gives the external tests of package core (package core_test)
// what they test that is not exported.

// ClientAddr is clientAddr without trusted networks, for Config.NumProxies
// proxies.
func ClientAddr(remoteAddr string, forwardedFor []string, proxies *int) netip.Addr {
	a, _ := clientAddr(remoteAddr, forwardedFor, proxiesOf(proxies), nil)
	return a
}

// ParseRate is parseRate.
var ParseRate = parseRate

// ParseRates is parseRates.
var ParseRates = parseRates

// TrustedClientAddr is clientAddr, for Config.NumProxies proxies.
func TrustedClientAddr(remoteAddr string, forwardedFor []string, proxies *int, trusted Networks) (netip.Addr, bool) {
	return clientAddr(remoteAddr, forwardedFor, proxiesOf(proxies), trusted)
}

// CountedKey is countedKey.
func (c Caller) CountedKey() (string, bool) { return c.countedKey() }

// HasScope reports whether name is a known scope.
func (l *Limiter) HasScope(name string) bool { return l.scopes[name] != nil }

// Contains is contains.
func (n Networks) Contains(a netip.Addr) bool { return n.contains(a) }

// CheckCost is checkCost.
func (l *Limiter) CheckCost(scope string, cost int64) error { return l.checkCost(scope, cost) }

// Decide is Check, for a request at the guard's own cost, and the
// Ticket's Decision.
func (g *Guard) Decide(ctx context.Context, caller Caller, h http.Header) *Decision {
	var t Ticket
	g.Check(ctx, &t, Call{Caller: caller, Header: h})
	return t.Decision()
}

// Exempt is Check of an exempt caller, for a request at the guard's own
// cost, and the Ticket's Decision.
func (g *Guard) Exempt(ctx context.Context, caller Caller) *Decision {
	var t Ticket
	g.Check(ctx, &t, Call{Caller: caller, Exempt: true})
	return t.Decision()
}

// DecideInto is Check into a Ticket of its own, whose decision it copies
// into d: the decision without its give-back.
func (g *Guard) DecideInto(ctx context.Context, d *Decision, caller Caller, route string, h http.Header) {
	var t Ticket
	g.Check(ctx, &t, Call{Caller: caller, Route: route, Header: h})
	*d = t.d
}

// ExemptInto is DecideInto of an exempt caller.
func (g *Guard) ExemptInto(ctx context.Context, d *Decision, caller Caller, route string) {
	var t Ticket
	g.Check(ctx, &t, Call{Caller: caller, Route: route, Exempt: true})
	*d = t.d
}

// ForPlan is forPlan.
func (g *Guard) ForPlan(plan string) *Guard { return g.forPlan(plan) }

// WithRouteCosts is withRouteCosts.
func (g *Guard) WithRouteCosts(costs map[string]int64) (*Guard, error) {
	if err := (GuardConfig{Limiter: g.lim, Scope: g.scope.name, RouteCosts: costs}).Validate(); err != nil {
		return nil, err
	}
	return g.withRouteCosts(costs), nil
}
