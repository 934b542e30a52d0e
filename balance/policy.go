package balance

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ratescope/ratescope/core"
)

// A Policy is the figures of a balance limit: how the balance decays and
// where the caller is warned and dropped.
//
// The zero Policy is [DefaultPolicy], rippled's figures. Any other policy
// is taken as written, every field, so that a zero WarnCost, DropCost or
// WarnEvery means zero: start from DefaultPolicy and change the figures
// you need. A policy that sets some figures and leaves Window, Warn or
// Drop zero is an error of [New], so that a figure left out is never
// silently zero (ADR 0070); so is a Warn above Drop, which would drop
// callers that were never warned.
//
// Each caller has a sum of request costs that loses ceil(sum/W) per whole
// second, W being Window in seconds; its balance is sum/W, so that a steady
// cost of R per second settles near a balance of R. A request at a balance
// at or above Drop is refused and costs DropCost instead of its own cost; a
// request served that leaves the balance at or above Warn tells the caller
// "load", and the warning costs WarnCost, at most once per WarnEvery. Both
// comparisons are inclusive. After more than 4*W whole seconds without a
// request the balance is zero. See ADR 0020.
type Policy struct {
	// Window is the decay window, a whole number of seconds from 1s up to
	// [MaxWindow]. Default (zero policy): 32s.
	Window time.Duration
	// Warn is the warning threshold, from 1 up to Drop. Default (zero
	// policy): 5000.
	Warn int64
	// WarnCost is the cost of a warning, 0 or more; 0 makes warnings free.
	// Default (zero policy): 2000.
	WarnCost int64
	// WarnEvery is the least time between two charged warnings of one
	// caller, 0 or more; 0 charges every warning. Default (zero policy):
	// 1s.
	WarnEvery time.Duration
	// Drop is the drop threshold, at least 1. Default (zero policy): 15000.
	Drop int64
	// DropCost is the cost of each refused request, 0 or more; 0 lets a
	// dropped caller's balance decay while it keeps asking. Default (zero
	// policy): 3000.
	DropCost int64
}

// MaxWindow is the longest decay window: the stores step a balance once
// per elapsed second, up to 4*Window steps, so the window bounds the work
// of one decision.
const MaxWindow = time.Hour

// DefaultPolicy returns rippled's figures: a 32 s window, a warning at
// 5000 costing 2000 at most once a second, a drop at 15000 costing 3000.
func DefaultPolicy() Policy {
	return Policy{Window: 32 * time.Second, Warn: 5000, WarnCost: 2000, WarnEvery: time.Second, Drop: 15000, DropCost: 3000}
}

// Costs are the costs of the classes of request of a balance scope, as the
// XRP Ledger server (rippled) weighs them by how much work they take. A
// route or message picks one (or any other number) as its cost.
type Costs struct {
	// Reference is the cost of an ordinary request. Default: 20.
	Reference int64
	// Malformed is the cost of a request the server cannot understand (an
	// unknown command). Default: 100.
	Malformed int64
	// Medium is the cost of a request of some weight (a ledger, an account's
	// transactions). Default: 400.
	Medium int64
	// Heavy is the cost of an expensive request (a path search). Default:
	// 3000.
	Heavy int64
}

// DefaultCosts returns rippled's costs: 20, 100, 400 and 3000.
func DefaultCosts() Costs {
	return Costs{Reference: 20, Malformed: 100, Medium: 400, Heavy: 3000}
}

// withDefaults returns rippled's policy for the zero policy, and p as
// written otherwise.
func (p Policy) withDefaults() Policy {
	if p == (Policy{}) {
		return DefaultPolicy()
	}
	return p
}

func (c Costs) withDefaults() Costs {
	d := DefaultCosts()
	for _, f := range []struct{ v, d *int64 }{
		{&c.Reference, &d.Reference}, {&c.Malformed, &d.Malformed}, {&c.Medium, &d.Medium}, {&c.Heavy, &d.Heavy},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	return c
}

// validate reports every problem with p, after defaults.
func (p Policy) validate() error {
	var errs []error
	if p.Window == 0 || p.Warn == 0 || p.Drop == 0 {
		var unset []string
		for _, f := range []struct {
			name string
			zero bool
		}{{"Window", p.Window == 0}, {"Warn", p.Warn == 0}, {"Drop", p.Drop == 0}} {
			if f.zero {
				unset = append(unset, f.name)
			}
		}
		errs = append(errs, fmt.Errorf("Policy leaves %s zero: a policy with any figure set is taken as written (zero is zero); start from balance.DefaultPolicy() and change the figures you need, or leave the whole policy zero for rippled's", strings.Join(unset, ", ")))
	}
	if p.Window != 0 && p.Window < time.Second || p.Window > MaxWindow || p.Window%time.Second != 0 {
		errs = append(errs, fmt.Errorf("Window %s: want a whole number of seconds from 1s to %s", p.Window, MaxWindow))
	}
	if p.WarnEvery < 0 {
		errs = append(errs, fmt.Errorf("WarnEvery %s: must not be negative", p.WarnEvery))
	}
	for _, f := range []struct {
		name string
		v    int64
		min  int64
	}{{"Warn", p.Warn, 1}, {"WarnCost", p.WarnCost, 0}, {"Drop", p.Drop, 1}, {"DropCost", p.DropCost, 0}} {
		// A zero threshold is reported above.
		if f.v < 0 || f.v > core.MaxLimit {
			errs = append(errs, fmt.Errorf("%s %d: want %d to %d", f.name, f.v, f.min, int64(core.MaxLimit)))
		}
	}
	if p.Warn > p.Drop && p.Drop > 0 {
		errs = append(errs, fmt.Errorf("Warn %d is above Drop %d: callers would be dropped without a warning; want Warn at or below Drop", p.Warn, p.Drop))
	}
	return errors.Join(errs...)
}

// validate reports every cost out of range.
func (c Costs) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"Reference", c.Reference}, {"Malformed", c.Malformed}, {"Medium", c.Medium}, {"Heavy", c.Heavy}} {
		if f.v < 0 || f.v > core.MaxLimit {
			errs = append(errs, fmt.Errorf("Costs.%s: cost %d: want 0 to %d", f.name, f.v, int64(core.MaxLimit)))
		}
	}
	return errors.Join(errs...)
}

// validName reports whether name follows the rules of core.Scope names:
// lower-case letters, digits, '.', '_' and '-', not ending in .anon or
// .user.
func validName(name string) bool {
	if name == "" || strings.HasSuffix(name, ".anon") || strings.HasSuffix(name, ".user") {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}
