package core

import (
	"context"
	"errors"
	"time"
)

// A Store keeps the counts. It must be safe for concurrent use.
//
// [New] binds the store once to each scope and kind of caller, with the
// limits that scope enforces for that kind (and once more for each plan of
// the scope, see [Scope.Plans]), and then sends every request to the
// [Counter] that Bind returned. Bindings of one scope and kind whose limits
// have the same periods share their counts: a caller changing plan keeps
// what it used. Bind returns an error for limits the store cannot keep;
// [New] then fails, so that no request fails later for that reason.
//
// Every store counts with the same algorithm, so that a decision does not
// depend on where the counts live: a sliding window of each rate's period,
// cut into 20 buckets and read conservatively (see the package
// documentation). Package storetest checks a store against one conformance
// suite.
type Store interface {
	Bind(scope string, kind Kind, limits []Rate) (Counter, error)
}

// A Counter keeps the counts of one scope and kind of caller with fixed
// limits, one count per [Key]. It must be safe for concurrent use.
//
// Take decides one request: if every limit has room for cost units at
// now, it records the cost on all of them and reports Allowed; otherwise
// it records nothing. The check and the update are one atomic step for all
// the limits, even when several processes share the store. The memory
// store counts on now (on its monotonic reading when it has one); the Redis
// store counts on the server's clock unless configured to use now.
//
// GiveBack takes cost units out of the buckets where the allowed request
// at [Result.At] was counted, never below zero; Reset clears the caller's
// counts, so that its next request starts afresh. A GiveBack that did not
// reach the store (a circuit breaker that is open) returns an error that
// wraps [ErrNotSent]: the request may then be given back again. Any other
// error means the units may or may not have been given back.
//
// An error means the store could not decide (for example, it could not be
// reached); the [Limiter] then does what the scope's [FailMode] says. An
// error that wraps [ErrLate] says that the store is reachable but did not
// answer in time: the Limiter then decides the request in its own memory,
// unless the scope fails closed. Being over a limit is not an error.
//
// The decaying balance of request costs, a second kind of limit, has a
// store interface of its own, in package balance.
type Counter interface {
	Take(ctx context.Context, key Key, cost int64, now time.Time) (Result, error)
	GiveBack(ctx context.Context, key Key, cost int64, at int64) error
	Reset(ctx context.Context, key Key, now time.Time) error
}

// ErrNotSent is wrapped by the error of a [Counter]'s GiveBack that gave
// nothing back because it sent nothing to the store: a Redis node whose
// circuit breaker is open, for example. Such a give-back leaves the request
// counted and not yet given back, so that [Ticket.GiveBack] and
// [Limiter.GiveBack] may try it again; after any other error they do not,
// since the store may have given the units back already.
var ErrNotSent = errors.New("ratescope: not sent to the store")

// ErrLate is wrapped by the error of a [Counter]'s Take that got no answer
// in time from a store that is reachable: its server answered recently and
// nothing says it is down (the Redis store's breaker is closed). The
// [Limiter] then decides the request in its own memory, knowing what the
// store last said of the caller, rather than serving it uncounted
// ([OutcomeLocal]); a scope that fails closed refuses it. The request may still be counted by the store when
// its answer comes after all.
var ErrLate = errors.New("ratescope: the store answered late")

// A Result is a [Counter]'s answer to Take.
type Result struct {
	// Allowed reports whether the cost was taken from every limit.
	Allowed bool
	// Limits holds, at the same index as the Counter's limits, the state of
	// each limit after the request. Entries past the number of limits are
	// zero.
	Limits [MaxLimits]LimitStatus
	// At is when the store counted an allowed request, on the store's own
	// clock and in its own unit: opaque to all but the store, which reads
	// it back in [Counter.GiveBack]. Zero when the request was refused.
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
