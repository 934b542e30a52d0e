package core

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
)

// This file holds plans: named sets of rates for signed-in users, chosen
// per request ([Call.Plan]), counted on the caller's one count whatever
// the plan.

// planSep separates a rate key from its plan: "api.user@gold".
const planSep = "@"

// maxPlanName is the longest plan name, in bytes.
const maxPlanName = 64

// validPlanName reports whether name is a plan name: 1 to 64 lower-case
// letters, digits, '_' and '-'.
func validPlanName(name string) bool {
	return name != "" && len(name) <= maxPlanName && nameChars(name, "")
}

// planSyntax ends the errors about a plan key.
const planSyntax = "want SCOPE.user@PLAN=RATE[,RATE...] with PLAN made of lower-case letters, digits, '_' and '-', e.g. api.user@gold=600/min,100000/day"

// checkPlanKey checks a rate key with a plan, "SCOPE.KIND@PLAN", and
// returns its scope and plan: the error says what is wrong with it.
func checkPlanKey(key string) (scope, plan string, err error) {
	base, plan, _ := strings.Cut(key, planSep)
	scope, kind, ok := splitRateKey(base)
	switch {
	case !ok:
		return "", "", fmt.Errorf("rate key %q: %q is not SCOPE.user; %s", key, base, planSyntax)
	case kind == Anonymous:
		return "", "", fmt.Errorf("rate key %q: plans are for signed-in users only (an anonymous caller has no account to choose a plan from); use %s.user@%s, or change %s for every anonymous caller", key, scope, plan, base)
	case !validPlanName(plan):
		return "", "", fmt.Errorf("rate key %q: plan name %q: %s", key, plan, planSyntax)
	}
	return scope, plan, nil
}

// resolvePlans applies the plan keys of the rates dictionary (keys, sorted,
// are its keys) to the scopes, whose base rates are resolved, and checks
// every plan: its name, its rates, and its periods, which must be those of
// the scope's user rates. It puts each plan's rates in the order of the
// user rates.
func resolvePlans(scopes map[string]*Scope, keys []string, rates map[string]string) []error {
	var errs []error
	for _, key := range keys {
		if !strings.Contains(key, planSep) {
			continue
		}
		name, plan, err := checkPlanKey(key)
		if err != nil {
			errs = append(errs, &ConfigError{ID: idInvalidRate, Err: err})
			continue
		}
		s := scopes[name]
		if s == nil {
			errs = append(errs, rateErr("rate key %q names no known scope: want SCOPE.user@PLAN with SCOPE one of %s", key, strings.Join(sortedNames(scopes), ", ")))
			continue
		}
		rs, err := parseRates(rates[key])
		if err != nil {
			errs = append(errs, rateErr("rate key %q: %w", key, err))
			continue
		}
		if s.Plans == nil {
			s.Plans = map[string][]Rate{}
		}
		s.Plans[plan] = rs
	}
	for _, name := range sortedNames(scopes) {
		s := scopes[name]
		for _, plan := range slices.Sorted(maps.Keys(s.Plans)) {
			key := name + ".user" + planSep + plan
			if !validPlanName(plan) {
				errs = append(errs, rateErr("scope %q: plan name %q: %s", name, plan, planSyntax))
				continue
			}
			rs := s.Plans[plan]
			if err := validateRates(rs); err != nil {
				errs = append(errs, rateErr("%s: %w", key, err))
				continue
			}
			ordered, ok := inPeriodsOf(rs, s.User)
			if !ok {
				errs = append(errs, rateErr("%s: its periods (%s) are not those of %s.user (%s): a plan is counted on the caller's one count, kept per period, so give %s one rate over each period of %s.user, e.g. %s", key, periodsOf(rs), name, periodsOf(s.User), key, name, example(s.User)))
				continue
			}
			s.Plans[plan] = ordered
		}
	}
	return errs
}

// inPeriodsOf returns rates in the order of the periods of base, and
// whether rates has exactly those periods.
func inPeriodsOf(rates, base []Rate) ([]Rate, bool) {
	if len(rates) != len(base) {
		return nil, false
	}
	out := make([]Rate, len(base))
	for i, b := range base {
		j := slices.IndexFunc(rates, func(r Rate) bool { return r.Period == b.Period })
		if j < 0 {
			return nil, false
		}
		out[i] = rates[j]
	}
	return out, true
}

// periodsOf returns the periods of rates, as Rate.UnmarshalText reads them: "min,day".
func periodsOf(rates []Rate) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = periodString(r.Period)
	}
	return strings.Join(parts, ",")
}

// example returns rates of ten times those of base, in the form of a RateTable value
// reads.
func example(base []Rate) string {
	parts := make([]string, len(base))
	for i, r := range base {
		parts[i] = Rate{Limit: min(r.Limit*10, MaxLimit), Period: r.Period}.String()
	}
	return strings.Join(parts, ",")
}

// storeRates returns the limits the store is first bound to for the signed-in
// callers of s: their rates, or when s has plans, the rates over the same
// periods each at the largest limit of the user rates and every plan's, so
// that one Store, with counters wide enough for all of them, decides every
// plan on one count.
func storeRates(s *Scope) []Rate {
	if len(s.Plans) == 0 {
		return s.User
	}
	widest := slices.Clone(s.User)
	for _, rates := range s.Plans {
		for i := range widest {
			widest[i].Limit = max(widest[i].Limit, rates[i].Limit)
		}
	}
	return widest
}

// initPlans gives sl, the resolved scope s, a scopeLimits per plan: the
// same scope and anonymous limits, the plan's user rates, on the store of
// sl's signed-in callers.
func (l *Limiter) initPlans(sl *scopeLimits, s *Scope, cfg *Config) error {
	if len(s.Plans) == 0 {
		return nil
	}
	sl.plans = make(map[string]*scopeLimits, len(s.Plans)+1)
	sl.plans[""] = sl
	for name, rates := range s.Plans {
		ps := &scopeLimits{name: sl.name, shadow: sl.shadow, mode: sl.mode, plans: sl.plans}
		ps.kinds[Anonymous] = sl.kinds[Anonymous]
		ps.kinds[User] = newKindLimits(sl.name, User, rates, cfg.LoadRatio, cfg.LegacyHeaders)
		c, err := bind(cfg.Store, sl.name, User, rates)
		if err != nil {
			return err
		}
		ps.kinds[User].counter = c
		ps.kinds[User].headers = sl.kinds[User].headers
		ps.kinds[User].plan = name
		ps.kinds[User].local = newLocal(cfg, sl.mode, rates)
		sl.plans[name] = ps
	}
	return nil
}

// Plans returns the names of the plans of scope, sorted: none for a scope
// without plans or an unknown scope. Call it at startup to check that the
// plans your accounts can have are all known: a request on another plan
// gets the scope's user rates ([Call.Plan]).
func (l *Limiter) Plans(scope string) []string {
	s := l.scopes[scope]
	if s == nil {
		return nil
	}
	var names []string
	for name := range s.plans {
		if name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// withPlans gives g the Guards of the plans of its scope, for requests of
// the given cost and routes' costs (nil for none) as g has them: g itself
// for the plan g decides, a copy for each other (the scope's own rates
// under "").
func (g *Guard) withPlans(cost int64, costs map[string]int64) {
	g.plans = nil
	if len(g.scope.plans) == 0 {
		return
	}
	plans := make(map[string]*Guard, len(g.scope.plans))
	for name, ps := range g.scope.plans {
		if ps == g.scope {
			plans[name] = g
			continue
		}
		p := &Guard{lim: g.lim, scope: ps, raw: cost, plans: plans}
		p.cost = [2]int64{g.cost[Anonymous], p.clampedPlan("", cost)}
		if costs != nil {
			p.costs = make(map[string][2]int64, len(costs))
			for route, c := range g.costs {
				p.costs[route] = [2]int64{c[Anonymous], p.clampedPlan(route, costs[route])}
			}
		}
		plans[name] = p
	}
	g.plans = plans
}

// clampedPlan returns cost clamped for the signed-in callers of g's plan,
// and logs a warning if it had to clamp it.
func (g *Guard) clampedPlan(route string, cost int64) int64 {
	kl := &g.scope.kinds[User]
	out := kl.clampCost(cost)
	if out != cost {
		g.lim.logger.Warn("ratescope: cost above the smallest limit of a plan; clamped to it, so such a request is allowed only when the caller has used nothing of that limit",
			"scope", g.scope.name, "plan", kl.plan, "route", route, "cost", cost, "clamped", out)
	}
	return out
}

// forPlan returns the Guard that decides the requests of signed-in callers
// on plan ([Call.Plan]): the same scope, costs and count, with the plan's
// rates for signed-in callers, and the scope's anonymous rates for
// anonymous ones. For "" it returns the Guard of the scope's own user
// rates. For a plan the scope does not have, it returns that Guard too, and
// logs a warning at most once per Config.ErrorLogInterval ([Limiter.Plans]
// lists the known plans). It costs a map lookup and allocates nothing.
func (g *Guard) forPlan(plan string) *Guard {
	if p := g.plans[plan]; p != nil {
		return p
	}
	if plan != "" {
		g.lim.unknownPlan(g.scope.name, plan)
	}
	if p := g.plans[""]; p != nil {
		return p
	}
	return g
}

// unknownPlan logs, at a limited rate, a request on a plan that scope does
// not have.
func (l *Limiter) unknownPlan(scope, plan string) {
	quiet, ok := l.planLog.allow(l.now())
	if !ok {
		return
	}
	known := "none"
	if s := l.scopes[scope]; s != nil && len(s.plans) > 0 {
		known = strings.Join(l.Plans(scope), ", ")
	}
	l.logger.LogAttrs(context.Background(), slog.LevelWarn, "ratescope: unknown plan; the caller gets the scope's user rates",
		slog.String("scope", scope), slog.String("plan", plan), slog.String("known", known), slog.Int64("suppressed", quiet))
}

// Plan returns the plan whose rates decided the request, or "" for the
// scope's own rates (and for every anonymous caller, exempt caller or
// balance scope). Its values are the few plan names of the configuration,
// fit for a metric label.
func (d *Decision) Plan() string {
	if d.limits == nil {
		return ""
	}
	return d.limits.plan
}
