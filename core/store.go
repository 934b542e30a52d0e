package core

import (
	"context"
	"time"
)

// A Store keeps the counts. It must be safe for concurrent use.
//
// Take decides one request: if every limit in req.Limits has room for
// req.Cost units at req.Now, it records the cost on all of them and reports
// Allowed; otherwise it records nothing. The check and the update are one
// atomic step for all the limits (all or nothing), even when several
// processes share the store. Counts are kept per scope, per kind of caller
// and per caller: requests that differ in any of those never share a count.
//
// Every store counts with the same algorithm, so that a decision does not
// depend on where the counts live: a sliding window of each rate's period,
// cut into 20 buckets and read conservatively (see the package
// documentation for the guarantee). Stores are checked against one
// conformance suite, package storetest. A store never answers a
// RetryAfter or a Reset longer than the period of its limit.
//
// An error means the store could not decide (for example, it could not be
// reached); the [Limiter] then allows the request without counting it (it
// fails open). Being over a limit is not an error.
//
// The decaying balance of request costs, a second kind of limit, has a
// store interface of its own, in package balance.
type Store interface {
	Take(ctx context.Context, req Request) (Result, error)
}

// A ScopedStore is a [Store] that can give the requests of one scope and
// kind of caller, always with the same limits, a Store of their own:
// ForScope returns a Store that decides those requests exactly as the
// ScopedStore would, on the same counts, without finding on each request
// where their counts live. [New] asks for one per scope and kind of caller
// and sends their requests there. A request with another scope, kind or
// limits may still reach the Store returned, which must then decide it as
// the ScopedStore would. The interface is optional; memstore has it, and
// package storetest runs the conformance suite through ForScope too.
//
// For the signed-in callers of a scope with plans ([Scope.Plans]), [New]
// asks for one Store with limits over the scope's periods, each the
// largest of the scope's user rates and of its plans' over that period, and
// sends it the requests of every plan, each with its own limits (never
// above those): it must decide them all on the caller's one count, so that
// a caller changing plan keeps what it used.
type ScopedStore interface {
	Store
	ForScope(scope string, kind Kind, limits []Rate) Store
}

// A Request asks a [Store] to take Cost units from every limit in Limits.
type Request struct {
	// Scope is the name of the scope the limits belong to.
	Scope string
	// Caller is who is counted. Its Kind separates signed-in from
	// anonymous counts.
	Caller Caller
	// Limits are the rates to enforce, 1 to MaxLimits of them with
	// distinct periods. A store keeps one window per period.
	Limits []Rate
	// Cost is the number of units the request uses, at least 1.
	Cost int64
	// Now is the time of the request, read once by the Limiter. The memory
	// store counts on it (on its monotonic reading when it has one); the
	// Redis store counts on the server's clock unless configured to use
	// it. Tests pass a fake clock's time, so that they are exact.
	Now time.Time
}

// A Result is a [Store]'s answer to a [Request].
type Result struct {
	// Allowed reports whether the cost was taken from every limit.
	Allowed bool
	// Limits holds, at the same index as Request.Limits, the state of each
	// limit after the request. Entries past len(Request.Limits) are zero.
	Limits [MaxLimits]LimitStatus
	// At is when the store counted an allowed request, on the store's own
	// clock and in its own unit: opaque to all but the store, which reads
	// it back in [GiveBackStore.GiveBack] to find the buckets the request
	// was counted in. Zero when the request was refused.
	At int64
}

// LimitStatus is the state of one limit after a request.
type LimitStatus struct {
	// Rate is the limit.
	Rate Rate
	// Remaining is how many units the caller may still use now, after
	// this request (if it was allowed).
	Remaining int64
	// Reset is how long until the window holds nothing and Remaining is
	// back to Rate.Limit, if the caller sends nothing meanwhile.
	Reset time.Duration
	// RetryAfter is how long until this limit has room for the request,
	// if the caller sends nothing meanwhile: 0 when it has room now.
	RetryAfter time.Duration
}
