package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
)

// A Guard decides the requests of one scope, each at its route's cost and
// its caller's plan: what a middleware does for every request, in the same
// way for every framework ([Guard.Check]). Build it once per middleware
// with [NewGuard]; it is safe for concurrent use.
type Guard struct {
	lim   *Limiter
	scope *scopeLimits
	raw   int64               // the cost asked for, before clamping
	cost  [2]int64            // by Kind, clamped
	costs map[string][2]int64 // by route pattern, clamped

	// plans are the Guards of the plans of the scope, by name, the
	// scope's own rates under "" (plan.go); nil for a scope without plans.
	plans map[string]*Guard
}

// DefaultScope is the name of the scope of [DefaultScopes], which the
// adapters' middlewares decide in unless told otherwise.
const DefaultScope = "api"

// clamped returns cost for each kind of caller, clamped, and logs a
// warning for each kind it had to clamp.
func (g *Guard) clamped(route string, cost int64) [2]int64 {
	var out [2]int64
	for k := range g.scope.kinds {
		kl := &g.scope.kinds[k]
		out[k] = kl.clampCost(cost)
		if out[k] != cost {
			g.lim.logger.Warn("ratescope: cost above the smallest limit; clamped to it, so such a request is allowed only when the caller has used nothing of that limit",
				"scope", g.scope.name, "kind", Kind(k).String(), "route", route, "cost", cost, "clamped", out[k])
		}
	}
	return out
}

// withRouteCosts returns a copy of g that decides a request to one of the
// routes of costs at that route's cost ([GuardConfig.RouteCosts]), and
// any other request at g's cost, in one decision. A cost above a limit is
// clamped, as for [NewGuard]. The copy's
// plans (forPlan) have the same costs, clamped to their own limits; called
// on a plan's Guard, it returns the copy's Guard of that plan.
func (g *Guard) withRouteCosts(costs map[string]int64) *Guard {
	if plan := g.scope.kinds[User].plan; plan != "" {
		// A plan's Guard: give the scope's own Guard the costs, and
		// return its copy for the plan.
		return g.plans[""].withRouteCosts(costs).plans[plan]
	}
	c := *g
	c.costs = make(map[string][2]int64, len(costs))
	for _, route := range slices.Sorted(maps.Keys(costs)) {
		c.costs[route] = c.clamped(route, costs[route]) // validated by GuardConfig.Validate
	}
	c.withPlans(c.raw, costs)
	return &c
}

// routeCost returns the cost a request by a caller of kind k to route is
// decided at: the route's cost if withRouteCosts gave one, the
// guard's otherwise, clamped.
func (g *Guard) routeCost(route string, k Kind) int64 {
	if g.costs != nil {
		if c, ok := g.costs[route]; ok {
			return c[k]
		}
	}
	return g.cost[k]
}

// The request pipeline that every middleware runs, in the same way on
// every framework: [Guard.Check] decides a [Call] into a [Ticket], and the
// Ticket hands out the decision and gives the request's units back at most
// once (docs/adr/0015-the-request-path.md).

// GuardConfig configures a [Guard], built by [NewGuard]. Zero fields
// take the defaults stated on each.
type GuardConfig struct {
	// Limiter decides the requests. Required.
	Limiter *Limiter

	// Scope is the scope the requests are decided in. Default:
	// [DefaultScope], "api".
	Scope string

	// Cost is the number of units each request uses, 1 or more; a cost
	// above the smallest limit of a kind of caller is clamped to it and
	// logged as a warning (see [Limiter.AllowN]). Default: 1.
	Cost int64

	// RouteCosts gives routes a cost of their own, keyed by route pattern
	// as the framework names it (Gin's FullPath, Echo's Path); a request to
	// a route it does not name costs Cost. Each request is decided once,
	// at its route's cost. A cost below 1 is an error. Default: none.
	RouteCosts map[string]int64
}

// NewGuard returns a Guard for cfg, or the error of [GuardConfig.Validate],
// so that a route set up badly fails at startup rather than on a request.
// A cost above the smallest limit of a kind of caller is clamped to it, as
// [Limiter.AllowN] says, and logged as a warning.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := cfg.Limiter
	g := &Guard{lim: l, scope: l.scopes[cfg.Scope], raw: cfg.Cost}
	g.cost = g.clamped("", cfg.Cost)
	g.withPlans(cfg.Cost, nil)
	if len(cfg.RouteCosts) > 0 {
		g = g.withRouteCosts(cfg.RouteCosts)
	}
	return g, nil
}

// withDefaults returns c with its zero fields set to their defaults.
func (c GuardConfig) withDefaults() GuardConfig {
	if c.Scope == "" {
		c.Scope = DefaultScope
	}
	if c.Cost == 0 {
		c.Cost = 1
	}
	return c
}

// Validate reports every problem of c that [NewGuard] would fail on, joined:
// no Limiter, an unknown scope (wrapping [ErrUnknownScope]), a cost below
// 1, a route cost below 1. It builds nothing and logs nothing.
func (c GuardConfig) Validate() error {
	c = c.withDefaults()
	if c.Limiter == nil {
		return errors.New("ratescope: GuardConfig.Limiter is nil: build one with core.New")
	}
	errs := []error{c.Limiter.checkCost(c.Scope, c.Cost)}
	for _, route := range slices.Sorted(maps.Keys(c.RouteCosts)) {
		if cost := c.RouteCosts[route]; cost < 1 {
			errs = append(errs, fmt.Errorf("ratescope: cost %d of route %q: want 1 or more; leave the route out of RouteCosts for the middleware's own cost", cost, route))
		}
	}
	return errors.Join(errs...)
}

// A Call is one request as a middleware hands it to [Guard.Check]: who
// made it, where to, and what the application says of the caller.
type Call struct {
	// Caller is who made the request, as [Limiter.Caller] finds it.
	Caller Caller
	// Route is the request's route pattern (Gin's FullPath, Echo's
	// Path), which chooses its cost ([GuardConfig.RouteCosts]); "" for
	// none.
	Route string
	// Plan is the plan of a signed-in caller ([Scope.Plans]), or "" for
	// the scope's own user rates; it is ignored for an anonymous caller.
	// A plan the scope does not have gets the scope's user rates, and a
	// warning in the log at most once per Config.ErrorLogInterval.
	Plan string
	// Exempt says that the application exempts the caller (an
	// administrator, a health checker): the request is allowed, not
	// counted, gets no headers, and is observed as [OutcomeExempt]. The
	// limiter's own allowlists (Config.ExemptNetworks,
	// Config.ExemptUsers) exempt a caller whatever it says.
	Exempt bool
	// Header receives the decision's headers ([Decision.SetHeaders]):
	// the response's headers. Nil writes none.
	Header http.Header
}

// A Ticket is one request's pass through a [Guard]: its decision, and the
// units it holds until the request was handled. [Guard.Check] fills it;
// a middleware keeps it in a variable of its own, so that a request whose
// decision nobody asks for costs no allocation.
//
// A request is given back at most once, whatever copies of its decision
// exist: [Ticket.GiveBack] and [Limiter.GiveBack] on the decision that
// [Ticket.Decision] returns share one mark, and give back what the store
// counted, whatever the decision's exported fields say. A Ticket must not
// be copied once Check filled it (go vet reports copies). Its methods are
// not safe for concurrent use; the Decision it returns is (for reading,
// and for [Limiter.GiveBack]).
//
// The zero Ticket is a request that was not decided: not allowed, no
// units to give back.
type Ticket struct {
	_ noCopy

	d     Decision // the decision, private until Decision copies it out
	grant grant    // what to give back, for a counted request
	kept  *kept    // the decision on the heap, once Decision was called
	lim   *Limiter // the Limiter that decided it
}

// kept is a decision on the heap, and the give-back it shares with its
// Ticket: one allocation.
type kept struct {
	d Decision
	g grant
}

// A grant is what a counted request can give back: its own copy of the
// scope, caller, cost and bucket the store counted it in, and whether it
// was given back.
type grant struct {
	limits *kindLimits // nil: nothing to give back
	scope  string
	caller Caller
	cost   int64
	at     int64
	given  atomic.Bool
}

// noCopy makes go vet's copylocks check report a copied [Ticket].
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Check decides call into t, which it first clears: a request by
// call.Caller to call.Route at the route's cost ([GuardConfig.RouteCosts])
// or the guard's, on call.Plan's rates, counting it if allowed, and writes
// the decision's headers to call.Header. When t does not allow the request
// ([Ticket.Allowed]), answer [Decision.Status] (429, or 503 when the
// scope fails closed) with the headers Check wrote. A store failure allows
// the request, as for [Limiter.AllowN], unless the scope fails closed. An
// exempt caller (call.Exempt, or on the limiter's allowlists) is allowed,
// not counted, and gets no headers. The decision is observed
// (Config.Observe), the hook getting a copy.
//
// Check keeps no reference to t.
func (g *Guard) Check(ctx context.Context, t *Ticket, call Call) {
	start := g.lim.start()
	if t.lim != nil || t.kept != nil {
		// A Ticket used before: clear it. A new one (a middleware's
		// variable) is zero already, and is not cleared twice.
		t.d, t.kept = Decision{}, nil
		t.grant.limits = nil
		t.grant.given.Store(false)
	}
	t.lim = g.lim
	if call.Plan != "" && call.Caller.Kind() == User {
		g = g.forPlan(call.Plan)
	}
	d := &t.d
	g.lim.decide(ctx, g.scope, call.Caller, g.routeCost(call.Route, call.Caller.Kind()), call.Exempt, d)
	if call.Header != nil {
		d.SetHeaders(call.Header)
	}
	g.lim.observe(ctx, d, start)
}

// Allowed reports whether the request may be served: [Decision.Allowed]
// without copying the decision out.
func (t *Ticket) Allowed() bool { return t.d.Allowed }

// Counted reports whether the request was counted ([OutcomeAllowed]), and
// so holds units that [Ticket.GiveBack] can give back, until it does.
func (t *Ticket) Counted() bool {
	gr := t.share()
	return gr.limits != nil && !gr.given.Load()
}

// StoreErr is the store's error when the decision failed open or failed
// closed: [Decision.StoreErr] without copying the decision out.
func (t *Ticket) StoreErr() error { return t.d.StoreErr }

// Decision returns the request's decision, on the heap: the same pointer
// on every call, safe to keep after the request (a deny handler's, a
// handler's through the framework's context). The first call copies the
// decision out, one allocation; [Limiter.GiveBack] on it and
// [Ticket.GiveBack] give the request back at most once between them.
func (t *Ticket) Decision() *Decision {
	if t.kept == nil {
		k := &kept{d: t.d}
		k.g.from(&t.d)
		k.g.given.Store(t.grant.given.Load())
		if k.g.limits != nil {
			k.d.grant = &k.g
		}
		t.kept = k
	}
	return &t.kept.d
}

// GiveBack gives the request's units back, so that it no longer counts
// against the caller's limits: call it after the request was handled,
// when its response shows it should not count (a sign-in that
// succeeded). It does what [Limiter.GiveBack] does on the decision: only a
// counted request has units to give back, and they are given back at
// most once (nil for any other call). The give-back is not cut short when
// ctx ends.
//
// The error is the store's, logged at most once per Config.ErrorLogInterval: the
// units then stay counted (the strict side). A give-back the store did not
// send (an error that wraps [ErrNotSent], such as an open circuit breaker's)
// may be made again once the store is back; after any other error the
// request counts as given back.
func (t *Ticket) GiveBack(ctx context.Context) error {
	return t.share().give(ctx, t.lim)
}

// share returns the give-back the Ticket shares with its decision on the
// heap, or its own before Decision was called, which it fills from the
// decision the first time a counted request needs it ([OutcomeAllowed]
// with limits: what the store counted), so that a request nobody gives
// back does not pay for the copy.
func (t *Ticket) share() *grant {
	if t.kept != nil {
		return &t.kept.g
	}
	gr := &t.grant
	if gr.limits == nil {
		gr.from(&t.d)
	}
	return gr
}

// from records what d, a decision no one else has seen, counted: nothing
// unless it is a counted request ([OutcomeAllowed] with limits).
func (g *grant) from(d *Decision) {
	if d.Outcome == OutcomeAllowed && d.limits != nil {
		g.limits, g.scope, g.caller, g.cost, g.at = d.limits, d.Scope, d.Caller, d.Cost, d.res.At
	}
}

var errNotAGuardDecision = errors.New("ratescope: the decision cannot be given back: only a decision of a Guard can (Guard.Check, then Ticket.GiveBack, or Limiter.GiveBack on Ticket.Decision)")

// give gives the request back once; see [Ticket.GiveBack].
func (g *grant) give(ctx context.Context, l *Limiter) error {
	if g.limits == nil || l == nil {
		return nil
	}
	if !g.given.CompareAndSwap(false, true) {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if err := g.limits.counter.GiveBack(ctx, g.caller.Key(), g.cost, g.at); err != nil {
		if errors.Is(err, ErrNotSent) {
			// Nothing reached the store: the request is still to give back.
			g.given.Store(false)
		}
		if quiet, ok := l.errLog.allow(l.now()); ok {
			l.logger.LogAttrs(ctx, slog.LevelError, "ratescope: store failed to give units back; they stay counted",
				slog.String("scope", g.scope), slog.String("error", err.Error()), slog.Int64("suppressed", quiet))
		}
		return err
	}
	return nil
}
