package core

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrUnknownScope is the error, wrapped, of a call that names a scope the
// [Limiter] does not have: [Limiter.Reset], [Limiter.AllowN] and
// [NewGuard]. Tell it apart with errors.Is, for example to
// answer 404 to an administrator who named no scope of the limiter.
var ErrUnknownScope = errors.New("ratescope: unknown scope")

// ErrResetUnsupported is the error, wrapped, of [Limiter.Reset] when the
// store cannot clear the counts of a balance scope: it lacks
// [BalanceResetStore]. memstore and redisstore have
// it. [New] does not require it, since most applications never reset.
var ErrResetUnsupported = errors.New("ratescope: the store cannot reset counts")

// A BalanceResetStore is a [BalanceStore] that can clear one caller's
// decaying balance. It is an optional interface: [Limiter.Reset] needs it
// for a balance scope, [New] does not.
//
// ResetBalance sets the balance of req.Caller in req.Scope back to zero,
// as if the caller had never been charged. req.Policy is the scope's
// policy (the Redis store keys balances by its window); req.Cost is not
// used; req.Now is the time of the reset. It is safe to call concurrently
// with Charge, as [Counter.Reset] does. A caller with no balance
// is no error.
type BalanceResetStore interface {
	ResetBalance(ctx context.Context, req BalanceRequest) error
}

// Reset clears the counts of caller in scope, for an operator who unblocks
// a caller: in a window scope, every window of the scope for the caller's
// kind, so that its next request finds the whole limit less its cost; in a
// balance scope ([Config.Balances]), its balance, back to zero. Other
// callers, the caller's counts in other scopes and, for a window scope, the
// other kind of caller's counts are kept. A caller with no counts is no
// error. The caller is one the limiter counts: [Limiter.AddrCaller] for an
// address, [UserCaller] for a user id, [KeyCaller] for a key (a Caller is
// built by nothing else, so that no user id an operator types reaches a
// key's counts).
//
// It is safe to call concurrently with the decisions: a request decided
// while the reset is in flight is counted either before it (and cleared)
// or after it (ADR 0100).
//
// The error wraps [ErrUnknownScope] when scope is neither a window scope
// nor a balance scope, [ErrResetUnsupported] when the store cannot reset
// a balance, and is the store's error, wrapped, when it failed.
// On success Config.Observe receives an [Event] whose Outcome is
// [OutcomeReset]; nothing is observed on an error.
func (l *Limiter) Reset(ctx context.Context, scope string, caller Caller) error {
	s, b := l.scopes[scope], l.balances[scope]
	if s == nil && b == nil {
		names := slices.Sorted(maps.Keys(l.scopes))
		names = append(names, sortedBalanceNames(l.balances)...)
		return fmt.Errorf("%w %q: the limiter's scopes are %s", ErrUnknownScope, scope, strings.Join(names, ", "))
	}
	if s != nil {
		start := l.start()
		if err := s.kinds[caller.Kind()].counter.Reset(ctx, caller.Key(), l.now()); err != nil {
			return fmt.Errorf("ratescope: reset %q in scope %q: %w", caller, scope, err)
		}
		if l.hook != nil {
			l.emit(ctx, Event{Decision: &Decision{Scope: scope, Caller: caller, Outcome: OutcomeReset}}, start)
		}
	}
	if b != nil {
		rs, ok := l.bstore.(BalanceResetStore)
		if !ok {
			return fmt.Errorf("%w: %T has no ResetBalance method (core.BalanceResetStore)", ErrResetUnsupported, l.bstore)
		}
		start := l.start()
		req := BalanceRequest{Scope: scope, Caller: caller, Policy: b.BalancePolicy, Now: l.now()}
		if err := rs.ResetBalance(ctx, req); err != nil {
			return fmt.Errorf("ratescope: reset %q in balance scope %q: %w", caller, scope, err)
		}
		l.observeBalance(ctx, &BalanceDecision{Scope: scope, Caller: caller, Outcome: OutcomeReset}, start)
	}
	return nil
}
