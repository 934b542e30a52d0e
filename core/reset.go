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

// Reset clears the counts of caller in scope, for an operator who unblocks
// a caller: every window of the scope for the caller's kind, so that its
// next request finds the whole limit less its cost (a balance of package
// balance is reset by its Guard). Other callers, the caller's counts in
// other scopes and the other kind of caller's counts are kept. A caller with no counts is no
// error. The caller is one the limiter counts: [Limiter.AddrCaller] for an
// address, [UserCaller] for a user id, [KeyCaller] for a key (a Caller is
// built by nothing else, so that no user id an operator types reaches a
// key's counts).
//
// It is safe to call concurrently with the decisions: a request decided
// while the reset is in flight is counted either before it (and cleared)
// or after it (ADR 0014).
//
// The error wraps [ErrUnknownScope] when scope is no scope of the
// limiter, and is the store's error, wrapped, when it failed.
// On success Config.Observe receives an [Event] whose Outcome is
// [OutcomeReset]; nothing is observed on an error.
func (l *Limiter) Reset(ctx context.Context, scope string, caller Caller) error {
	s := l.scopes[scope]
	if s == nil {
		names := slices.Sorted(maps.Keys(l.scopes))
		return fmt.Errorf("%w %q: the limiter's scopes are %s", ErrUnknownScope, scope, strings.Join(names, ", "))
	}
	start := l.start()
	if err := s.kinds[caller.Kind()].counter.Reset(ctx, caller.Key(), l.now()); err != nil {
		return fmt.Errorf("ratescope: reset %q in scope %q: %w", caller, scope, err)
	}
	// What the process counted in memory goes too (local.go).
	if lv := s.kinds[caller.Kind()].local; lv != nil {
		lv.forget(caller.Key())
	}
	for _, p := range s.plans {
		if lv := p.kinds[caller.Kind()].local; lv != nil {
			lv.forget(caller.Key())
		}
	}
	if l.hook != nil {
		l.emit(ctx, Event{Scope: scope, Caller: caller, Outcome: OutcomeReset, Decision: &Decision{Scope: scope, Caller: caller, Outcome: OutcomeReset}}, start)
	}
	return nil
}
