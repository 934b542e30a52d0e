package balance

import (
	"context"
	"time"

	"github.com/ratescope/ratescope/core"
)

// A Store keeps decaying balances: memstore and redisstore are Stores.
//
// Charge decides one request as [Policy] describes, atomically (the decay,
// the checks and the charges are one step, even when several processes
// share the store), at req.Now. Balances are kept per scope and per
// caller; both kinds of caller share the scope's policy. An error means
// the store could not decide; the [Guard] then allows the request without
// charging it, or refuses it in a scope that fails closed.
//
// ResetBalance sets the balance of req.Caller in req.Scope back to zero,
// as if the caller had never been charged. req.Policy is the scope's
// policy (the Redis store keys balances by its window); req.Cost is not
// used; req.Now is the time of the reset. It is safe to call concurrently
// with Charge: a charge in flight is decided either before the reset (and
// cleared) or after it. A caller with no balance is no error.
//
// Every store runs the same arithmetic and passes the conformance suite
// of package balance/balancetest.
type Store interface {
	Charge(ctx context.Context, req Request) (Result, error)
	ResetBalance(ctx context.Context, req Request) error
}

// A Request asks a [Store] to charge Cost to the balance of Caller in
// Scope.
type Request struct {
	// Scope is the name of the balance scope.
	Scope string
	// Caller is whose balance is charged.
	Caller core.Caller
	// Policy is the scope's policy, defaults applied.
	Policy Policy
	// Cost is the request's cost, 0 or more: a cost of 0 reads the balance
	// (and may still warn or drop the caller).
	Cost int64
	// Now is the time of the request, as for [core.Request].
	Now time.Time
}

// A Result is a [Store]'s answer to a [Request].
type Result struct {
	// Before is the balance before the request, after the decay.
	Before int64
	// Balance is the balance after the request's charges.
	Balance int64
	// Dropped reports that the caller was at or above the drop threshold:
	// the request is refused, and DropCost was charged instead of Cost.
	Dropped bool
	// Warned reports that the caller is warned: the balance is at or above
	// the warning threshold after a request that was served, and the
	// caller was not warned in the last WarnEvery.
	Warned bool
	// WarnCharged reports that the warning added a cost: false when
	// WarnCost is 0 or the balance had no room left below the drop
	// threshold (a warning alone never drops a caller).
	WarnCharged bool
}
