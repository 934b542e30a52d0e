// Package decay holds the arithmetic of package balance, the decaying
// balance of request costs that the XRP Ledger server (rippled) uses for
// its public APIs. Every balance store runs it: memstore calls
// [State.Charge] and the Redis store runs the same steps in Lua; the
// conformance suite (balance/balancetest) checks both against the same
// figures.
//
// # Decay
//
// A caller's state is an integer sum of costs. Once per whole second the sum
// loses ceil(sum/Window), and the balance reported is sum/Window (rounded
// down): a charge of C adds C/Window to the balance at once, and a steady
// cost of R per second settles near a balance of R. When more than
// 4*Window whole seconds pass between two steps (two requests of the
// caller), the sum is zero.
//
// Time is kept in nanoseconds, but the sum steps only at whole seconds
// counted from the time of its last step (Last), which moves by whole
// seconds only: calls less than a second apart keep the remainder, so
// that a caller who calls every 0.6 s decays once per second like everyone
// else instead of never (which a clock cut to whole seconds at each call
// would do).
//
// The figures of the tests: a charge of 480000 at t=0 reads 15000 at 0,
// 14531 at 1 s, 14077 at 2 s, 10919 at 10 s, 5430 at 32 s, 1965 at 64 s,
// 257 at 128 s and 0 at 129 s. A steady 250 requests a second of cost 20
// (5000 a second) reads 4999 right after the last request of each second,
// its highest reading, once settled: the sum then stays just under
// 160000 = 5000*32, where the decay of ceil(sum/32) = 5000 takes away
// exactly what a second adds. 750 a second reads 14999 the same way.
//
// # A charge
//
// [State.Charge] decides one request of cost C:
//
//  1. The sum decays to now, and B = sum/Window is the balance before.
//  2. If B is at or above Drop, the caller is dropped: the request is
//     refused and DropCost is charged instead of C, so that a caller who
//     keeps trying stays out until it stops for a while.
//  3. Otherwise C is charged. If the balance is then at or above Warn and
//     the caller was not warned in the last WarnEvery, it is warned
//     ("load"), and WarnCost is charged too, but never more than leaves
//     the balance below Drop: a warning alone never drops a caller.
//
// Every charge saturates at [MaxSum]: a cost, however large, never wraps
// the sum round to a credit.

package decay

// Second is one second in nanoseconds: the step of the decay.
const Second = int64(1e9)

// MaxSum is the largest sum: a charge that would go beyond it leaves the
// sum at MaxSum. It is 2^53, so that the Redis script's doubles hold every
// sum exactly, and its balance, MaxSum/Window, is above every threshold a
// policy may set.
const MaxSum = int64(1) << 53

// add returns sum+cost, saturated at MaxSum; a cost below 0 adds nothing.
func add(sum, cost int64) int64 {
	if cost <= 0 {
		return sum
	}
	if cost >= MaxSum-sum {
		return MaxSum
	}
	return sum + cost
}

// Policy is the figures of a balance limit. Costs are added to the sum;
// thresholds are compared with the balance, Sum/Window.
type Policy struct {
	// Window is the decay window in whole seconds, at least 1: the sum
	// loses ceil(sum/Window) per second. rippled: 32.
	Window int64
	// Warn is the warning threshold: at or above it a caller is warned.
	Warn int64
	// WarnCost is charged for a warning, but never more than leaves the
	// balance below Drop.
	WarnCost int64
	// WarnEvery is the least time, in nanoseconds, between two warnings
	// of one caller. rippled: one second.
	WarnEvery int64
	// Drop is the drop threshold: at or above it a caller is refused.
	Drop int64
	// DropCost is charged for each refused request.
	DropCost int64
}

// State is one caller's balance. The zero State holds nothing.
type State struct {
	// Sum is the decaying sum of costs.
	Sum int64
	// Last is the time of the sum's last step, in nanoseconds since the
	// Unix epoch; it moves by whole seconds only (see the package
	// documentation).
	Last int64
	// Warned is the time of the last warning, in nanoseconds since the
	// Unix epoch; 0 if none.
	Warned int64
}

// Outcome is what a charge did.
type Outcome struct {
	// Before is the balance before the charge, after the decay.
	Before int64
	// Balance is the balance after the charge.
	Balance int64
	// Dropped reports that the caller was at or above the drop threshold:
	// the request is refused and DropCost was charged instead of its cost.
	Dropped bool
	// Warned reports that the caller is warned: at or above the warning
	// threshold after the charge, and not warned in the last WarnEvery
	// (never when Dropped).
	Warned bool
	// WarnCharged reports that the warning added a cost: false when
	// WarnCost is 0 or the balance had no room left below Drop.
	WarnCharged bool
}

// Forget returns how long after Last, in nanoseconds, the sum is zero
// whatever it held: more than 4*Window whole seconds, so 4*Window+1 s.
// Stores may drop a state that long after its last step.
func Forget(window int64) int64 {
	return (4*window + 1) * Second
}

// Decay steps the sum to now (nanoseconds since the Unix epoch). A now
// before Last changes nothing: a clock that steps back is read as standing
// still.
func (s *State) Decay(window, now int64) {
	if s.Sum == 0 {
		// Nothing to decay: start counting whole seconds from now.
		s.Last = max(s.Last, now)
		return
	}
	if now <= s.Last {
		return
	}
	elapsed := (now - s.Last) / Second
	s.Last += elapsed * Second
	if elapsed > 4*window {
		s.Sum = 0
		return
	}
	for ; elapsed > 0 && s.Sum > 0; elapsed-- {
		s.Sum -= (s.Sum + window - 1) / window
	}
}

// Balance returns the balance: Sum/Window, rounded down. Call Decay first.
func (s *State) Balance(window int64) int64 {
	return s.Sum / window
}

// Charge decides a request of the given cost at now, as the package
// documentation describes, and records its charges in s.
func (s *State) Charge(p Policy, cost, now int64) Outcome {
	s.Decay(p.Window, now)
	o := Outcome{Before: s.Balance(p.Window)}
	if o.Before >= p.Drop {
		o.Dropped = true
		s.Sum = add(s.Sum, p.DropCost)
		o.Balance = s.Balance(p.Window)
		return o
	}
	s.Sum = add(s.Sum, cost)
	o.Balance = s.Balance(p.Window)
	if o.Balance >= p.Warn && (s.Warned == 0 || now-s.Warned >= p.WarnEvery) {
		o.Warned = true
		s.Warned = now
		// The most the sum may hold with a balance below Drop.
		limit := MaxSum
		if p.Drop <= MaxSum/p.Window {
			limit = p.Drop*p.Window - 1
		}
		if c := min(p.WarnCost, limit-s.Sum); c > 0 {
			o.WarnCharged = true
			s.Sum += c
			o.Balance = s.Balance(p.Window)
		}
	}
	return o
}
