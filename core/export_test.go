package core

import (
	"context"
	"net/http"
	"net/netip"
)

// This file gives the external tests of package core (package core_test)
// what they test that is not exported.

// ClientAddr is clientAddr without trusted networks.
func ClientAddr(remoteAddr string, forwardedFor []string, proxies ProxyCount) netip.Addr {
	a, _ := clientAddr(remoteAddr, forwardedFor, proxies, nil)
	return a
}

// TrustedClientAddr is clientAddr.
var TrustedClientAddr = clientAddr

// CountedKey is countedKey.
func (c Caller) CountedKey() (string, bool) { return c.countedKey() }

// HasScope reports whether name is a known scope.
func (l *Limiter) HasScope(name string) bool { return l.scopes[name] != nil }

// Decide is Charge, then SetHeaders of the decision: what a balance
// middleware does.
func (b *BalanceGuard) Decide(ctx context.Context, caller Caller, cost int64, h http.Header) *BalanceDecision {
	d := b.Charge(ctx, caller, cost)
	d.SetHeaders(h)
	return d
}

// Contains is contains.
func (n Networks) Contains(a netip.Addr) bool { return n.contains(a) }

// CheckCost is checkCost.
func (l *Limiter) CheckCost(scope string, cost int64) error { return l.checkCost(scope, cost) }

// Decide is DecideInto on a new Decision, for a request at the guard's own
// cost.
func (g *Guard) Decide(ctx context.Context, caller Caller, h http.Header) *Decision {
	d := new(Decision)
	g.DecideInto(ctx, d, caller, "", h)
	return d
}

// Exempt is ExemptInto on a new Decision, for a request at the guard's own
// cost.
func (g *Guard) Exempt(ctx context.Context, caller Caller) *Decision {
	d := new(Decision)
	g.ExemptInto(ctx, d, caller, "")
	return d
}
