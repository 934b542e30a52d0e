package core

import (
	"context"
	"errors"
)

// A GiveBackStore is a [Store] that can return the units of a request it
// has just counted: so that a scope counts only the requests that failed
// (sign-in attempts with a wrong password), each request is counted before
// it is handled, as every other, and its units are given back once its
// response shows it succeeded. Counting first keeps the limit strict
// under any concurrency: every attempt in flight holds its units, so no
// more than the limit can be under way at once (docs/adr/0101).
//
// GiveBack takes req.Cost units out of every limit of req.Limits for
// req.Caller in req.Scope, in the bucket of each window where the store
// counted a request at at: the [Result.At] of the Take that allowed it. It
// never takes out more than that bucket holds, so a count never goes below
// zero, and it leaves every other caller, kind and scope alone. A bucket
// that has left its window (or the counts of a caller that have expired)
// is not touched: once the window moved on, the request no longer counts
// anyway, and a give-back changes nothing and is no error. The store does
// not remember what was given back: called twice for one request, it
// takes out the units twice, as long as the bucket holds them (other
// requests of the caller in the same bucket); [Ticket.GiveBack] gives
// each request back at most once.
//
// An error means the store could not give the units back (it could not be
// reached): they stay counted, the strict side. The interface is optional;
// memstore and redisstore have it, and package storetest checks it on
// every store that has it.
type GiveBackStore interface {
	Store
	GiveBack(ctx context.Context, req Request, at int64) error
}

// ErrNoGiveBack is the error, wrapped, of [Limiter.NewGuard] with
// GuardConfig.GiveBack, and of [Ticket.GiveBack] and [Limiter.GiveBack],
// when the Limiter's Store cannot give units back (it is no
// [GiveBackStore]).
var ErrNoGiveBack = errors.New("ratescope: the store cannot give units back (it has no GiveBack method, core.GiveBackStore); use memstore or redisstore")

// GiveBack returns the units of the request d was decided for, so that it
// no longer counts against the caller's limits: call it after the request
// was handled, when its response shows it should not count (a sign-in
// that succeeded). d is a decision a [Ticket] handed out
// ([Ticket.Decision]; a middleware's kept decision is one): the Ticket and
// every copy of d share one mark, so the request is given back at most
// once, and what is given back is what the store counted, whatever d's
// exported fields say.
//
// Only a counted request (OutcomeAllowed) has units to give back: for any
// other (refused, failed open, exempt, shadow, the zero Decision) and for
// one given back already, GiveBack does nothing and returns nil. A
// counted decision that no Ticket handed out ([Limiter.AllowN]'s) cannot
// be given back: the error says so. A give-back after the window moved on
// past the bucket the request was counted in changes nothing (see
// [GiveBackStore]).
//
// The give-back is not cut short when ctx ends (a client that hung up
// once its request was handled still made the attempt): GiveBack keeps
// ctx's values but not its cancellation.
//
// The error wraps [ErrNoGiveBack] if the store cannot give units back, or
// is the store's: the units then stay counted (the strict side), and the
// error is logged at most once per Config.ErrorLogInterval. GiveBack keeps
// no reference to d and is safe for concurrent use.
func (l *Limiter) GiveBack(ctx context.Context, d *Decision) error {
	if d.grant == nil {
		if d.Outcome == OutcomeAllowed && d.Checked {
			return errNotAGuardDecision
		}
		return nil
	}
	return d.grant.give(ctx, l)
}
