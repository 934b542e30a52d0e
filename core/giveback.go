package core

import (
	"context"
)

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
// past the bucket the request was counted in changes nothing.
//
// The give-back is not cut short when ctx ends (a client that hung up
// once its request was handled still made the attempt): GiveBack keeps
// ctx's values but not its cancellation.
//
// The error is the store's: the units then stay counted (the strict side), and the
// error is logged at most once per Config.ErrorLogInterval. After an error
// that wraps [ErrNotSent] (the store sent nothing, as while a circuit
// breaker is open) the request may be given back again; after any other it
// counts as given back, since the store may have given it back. GiveBack keeps
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
