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
// [Limiter.Guard]. Tell it apart with errors.Is, for example to
// answer 404 to an administrator who named no scope of the limiter.
var ErrUnknownScope = errors.New("ratescope: unknown scope")

// ErrResetUnsupported is the error, wrapped, of [Limiter.Reset] when the
// store cannot clear counts: it lacks [ResetStore]. memstore and
// redisstore have it. [New] does not require it, since most applications
// never reset.
var ErrResetUnsupported = errors.New("ratescope: the store cannot reset counts")

// A ResetStore is a [Store] that can clear one caller's counts. It is an
// optional interface: [Limiter.Reset] needs it, [New] does not.
//
// Reset clears the counts of req.Caller in req.Scope, for the caller's
// kind: every window of that scope and kind, so that the caller's next
// request finds its whole allowance. req.Limits are the scope's limits for
// that kind, for a store whose keys depend on them (the Redis store keys
// counts by the limits' periods); a store that can find every window of
// the scope and kind without them (memstore) clears them all, whatever
// the limits. req.Cost is not used; req.Now is the time of the reset.
// Other callers, the other kind of caller and other scopes keep their
// counts. A caller with no counts is no error.
//
// Reset is safe to call concurrently with Take: a decision in flight is
// decided either before the reset (and its count cleared) or after it (and
// counted afresh). An error means the store could not clear the counts.
type ResetStore interface {
	Reset(ctx context.Context, req Request) error
}

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
// or after it (ADR 0100).
//
// The error wraps [ErrUnknownScope] when scope is no scope of the
// limiter, [ErrResetUnsupported] when the store cannot reset
// (see [ResetStore]), and is the store's error, wrapped, when it failed.
// On success Config.Observe receives an [Event] whose Outcome is
// [OutcomeReset]; nothing is observed on an error.
func (l *Limiter) Reset(ctx context.Context, scope string, caller Caller) error {
	s := l.scopes[scope]
	if s == nil {
		names := slices.Sorted(maps.Keys(l.scopes))
		return fmt.Errorf("%w %q: the limiter's scopes are %s", ErrUnknownScope, scope, strings.Join(names, ", "))
	}
	rs, ok := l.store.(ResetStore)
	if !ok {
		return fmt.Errorf("%w: %T has no Reset method (core.ResetStore)", ErrResetUnsupported, l.store)
	}
	start := l.start()
	req := Request{Scope: scope, Caller: caller, Limits: s.kinds[caller.Kind()].rates, Now: l.now()}
	if err := rs.Reset(ctx, req); err != nil {
		return fmt.Errorf("ratescope: reset %q in scope %q: %w", caller, scope, err)
	}
	if l.hook != nil {
		l.emit(ctx, Event{Scope: scope, Caller: caller, Outcome: OutcomeReset, Decision: &Decision{Scope: scope, Caller: caller, Outcome: OutcomeReset}}, start)
	}
	return nil
}
