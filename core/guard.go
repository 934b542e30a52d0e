package core

import (
	"maps"
	"slices"
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
