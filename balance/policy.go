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
// The zero Policy is rippled's figures, those of the Policy of
// [DefaultConfig]: a 32s window, a warning at 5000 at most once a second,
// a drop at 15000. Any other policy must set Window, Warn and Drop, or [New]
// fails, so that a threshold left out is never silently zero: start from
// DefaultConfig().Policy and change the figures you need. A WarnCost or
// DropCost of 0 takes the default scaled with its threshold (2/5 of Warn
// and 1/5 of Drop: rippled's 2000 and 3000 at 5000 and 15000), so that
// lowering the thresholds of the default policy lowers the costs with
// them; WarnEvery is taken as written. A Warn above Drop is an error of
// New, which would drop callers that were never warned, and so is a
// DropCost that keeps out for ever a caller who retries once a second (see
// DropCost).
//
// Each caller has a sum of request costs that loses ceil(sum/W) per whole
// second, W being Window in seconds; its balance is sum/W, so that a steady
// cost of R per second settles near a balance of R. A request at a balance
// at or above Drop is refused and costs DropCost instead of its own cost. A
// request served that leaves the balance at or above Warn warns the caller
// ("load") if it was not warned in the last WarnEvery, and the warning
// costs WarnCost, but never more than leaves the balance below Drop: a
// warning alone never drops a caller. Both comparisons are inclusive. No
// charge makes the sum wrap: it saturates far above any threshold. After
// more than 4*W whole seconds without a request the balance is zero. See
// ADR 0002.
type Policy struct {
	// Window is the decay window, a whole number of seconds from 1s up to
	// an hour: the stores step a balance once per elapsed second, so the
	// window bounds the work of one decision. Default (zero policy): 32s.
	Window time.Duration
	// Warn is the warning threshold, from 1 up to Drop. Default (zero
	// policy): 5000.
	Warn int64
	// WarnCost is the cost of a warning, 0 or more; 0 takes 2/5 of Warn
	// (2000 at rippled's 5000). A cost of 1 makes warnings all but free.
	WarnCost int64
	// WarnEvery is the least time between two warnings of one caller, 0
	// or more: within it a caller above Warn is served without "load" and
	// without the warning's cost. 0 warns on every request above Warn.
	// Default (zero policy): 1s, rippled's.
	WarnEvery time.Duration
	// Drop is the drop threshold, at least 1. Default (zero policy): 15000.
	Drop int64
	// DropCost is the cost of each refused request, 0 or more; 0 takes 1/5
	// of Drop (3000 at rippled's 15000). In one second the decay takes
	// about Drop from the sum of a caller at the threshold, so a caller
	// refused once a second gets back in if and only if
	// DropCost*(W-1) < Drop*W, W being Window in seconds; [New] refuses a
	// larger DropCost. At 1/5 of Drop, a caller who retries up to five
	// times a second gets back in, and one who hammers stays out.
	DropCost int64
}

// maxWindow is the longest decay window: the stores step a balance once
// per elapsed second, up to 4*Window steps, so the window bounds the work
// of one decision.
const maxWindow = time.Hour

// defaultPolicy returns rippled's figures, with WarnCost and DropCost left
// 0, which scales them with the thresholds (2000 and 3000 here).
func defaultPolicy() Policy {
	return Policy{Window: 32 * time.Second, Warn: 5000, WarnEvery: time.Second, Drop: 15000}
}

// The costs of the classes of request of the XRP Ledger server (rippled),
// weighed by how much work they take. A route or message picks one (or any
// other number) as its cost, to pass to [Guard.Charge].
const (
	// CostReference is the cost of an ordinary request.
	CostReference int64 = 20
	// CostMalformed is the cost of a request the server cannot understand
	// (an unknown command).
	CostMalformed int64 = 100
	// CostMedium is the cost of a request of some weight (a ledger, an
	// account's transactions).
	CostMedium int64 = 400
	// CostHeavy is the cost of an expensive request (a path search).
	CostHeavy int64 = 3000
)

// withDefaults returns rippled's policy for the zero policy, and p
// otherwise, a zero WarnCost or DropCost scaled with its threshold.
func (p Policy) withDefaults() Policy {
	if p == (Policy{}) {
		p = defaultPolicy()
	}
	if p.WarnCost == 0 {
		p.WarnCost = p.Warn * 2 / 5
	}
	if p.DropCost == 0 {
		p.DropCost = p.Drop / 5
	}
	return p
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
		errs = append(errs, fmt.Errorf("Policy leaves %s zero: a policy with any figure set must set the window and both thresholds; start from balance.DefaultConfig().Policy and change the figures you need, or leave the whole policy zero for rippled's", strings.Join(unset, ", ")))
	}
	if p.Window != 0 && p.Window < time.Second || p.Window > maxWindow || p.Window%time.Second != 0 {
		errs = append(errs, fmt.Errorf("Window %s: want a whole number of seconds from 1s to %s", p.Window, maxWindow))
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
	if w := int64(p.Window / time.Second); w > 1 && p.Drop > 0 && p.DropCost > 0 && p.DropCost*(w-1) >= p.Drop*w {
		errs = append(errs, fmt.Errorf("DropCost %d at Drop %d: a caller refused once a second would be kept out for ever (a second's decay at the threshold takes about %d); want DropCost*(Window-1) below Drop*Window, at most %d, or 0 for Drop/5", p.DropCost, p.Drop, p.Drop, (p.Drop*w-1)/(w-1)))
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
