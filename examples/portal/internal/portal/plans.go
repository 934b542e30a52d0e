package portal

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ratescope/ratescope/core"
)

// PlanUsers is the value of -plan-users: the users of each plan, keyed by
// plan. Its text form is PLAN=NAME[,NAME...][;PLAN=...], such as
// "gold=alice,bob;silver=carol".
type PlanUsers map[string][]string

// String returns the plans in the form Set reads, sorted by plan.
func (p PlanUsers) String() string {
	var parts []string
	for _, plan := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, plan+"="+strings.Join(p[plan], ","))
	}
	return strings.Join(parts, ";")
}

// Set adds the plans of s, PLAN=NAME[,NAME...][;PLAN=...]; a plan or a user
// given twice is an error.
func (p *PlanUsers) Set(s string) error {
	if *p == nil {
		*p = PlanUsers{}
	}
	var errs []error
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		plan, names, ok := strings.Cut(part, "=")
		plan = strings.TrimSpace(plan)
		var users []string
		for name := range strings.SplitSeq(names, ",") {
			if name = strings.TrimSpace(name); name != "" {
				users = append(users, name)
			}
		}
		switch {
		case !ok || plan == "" || len(users) == 0:
			errs = append(errs, fmt.Errorf("%q: want PLAN=NAME[,NAME...], e.g. gold=alice,bob", part))
		case (*p)[plan] != nil:
			errs = append(errs, fmt.Errorf("%q: plan %q given twice", part, plan))
		default:
			(*p)[plan] = users
		}
	}
	return errors.Join(errs...)
}

// checkPlans reports a plan of -plan-users without rates in -rates, a
// plan of -rates (a key api.user@PLAN) without users in -plan-users, a
// plan key of another scope or kind, and a user on two plans, each naming
// it.
func checkPlans(users PlanUsers, rates core.RateTable) error {
	var errs []error
	rated := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(rates)) {
		base, plan, ok := strings.Cut(key, "@")
		if !ok {
			continue
		}
		if base != ScopeAPI+".user" {
			errs = append(errs, fmt.Errorf("-rates: %s: the portal gives plans in scope %s only, to signed-in users: use %s.user@%s", key, ScopeAPI, ScopeAPI, plan))
			continue
		}
		rated[plan] = true
		if users[plan] == nil {
			errs = append(errs, fmt.Errorf("-rates: plan %q (%s) has no users: add %s=NAME[,NAME...] to -plan-users", plan, key, plan))
		}
	}
	planOf := map[string]string{}
	for _, plan := range slices.Sorted(maps.Keys(users)) {
		if !rated[plan] {
			errs = append(errs, fmt.Errorf("-plan-users: plan %q has no rates: add %s.user@%s=RATE[,RATE...] to -rates", plan, ScopeAPI, plan))
		}
		for _, name := range users[plan] {
			if other, dup := planOf[name]; dup {
				errs = append(errs, fmt.Errorf("-plan-users: user %q is on two plans, %q and %q", name, other, plan))
			}
			planOf[name] = plan
		}
	}
	return errors.Join(errs...)
}

// Plan returns the plan of the signed-in user, as -plan-users names it, or
// "" for the scope's own user rates.
func (a *App) Plan(user string) string {
	return a.plans[user]
}
