package core

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// An Outcome is what became of a request: the value of [Decision.Outcome].
// Its String values are short, lower-case and stable, fit to be metric
// label values.
type Outcome uint8

const (
	// OutcomeNone is the Outcome of a zero Decision, or of a call that
	// returned an error (an unknown scope): no decision was made.
	OutcomeNone Outcome = iota
	// OutcomeAllowed: the caller had room; the request was counted and
	// served.
	OutcomeAllowed
	// OutcomeDenied: the caller was over a limit; the request was refused
	// and not counted.
	OutcomeDenied
	// OutcomeFailedOpen: the store failed; the request was served without
	// being counted.
	OutcomeFailedOpen
	// OutcomeExempt: the caller is exempt (an administrator); the request
	// was served without being counted.
	OutcomeExempt
	// OutcomeShadow: the caller was over a limit, but the scope or the
	// whole limiter is in shadow mode, so the request was served. It was
	// not counted, exactly as a refusal is not.
	OutcomeShadow
	// OutcomeFailedClosed: the store failed and the scope fails closed
	// (Scope.FailClosed, Config.FailClosedScopes): the request was refused,
	// with 503 Service Unavailable rather than 429, and not counted.
	OutcomeFailedClosed
	// OutcomeReset is no decision on a request: an operator cleared the
	// caller's counts in the scope ([Limiter.Reset]). Its Event holds a
	// Decision (window scope) or a BalanceDecision (balance scope) with
	// only Scope, Caller and Outcome set: a Cost of 0, nothing allowed.
	OutcomeReset
)

var outcomeNames = [...]string{"none", "allowed", "denied", "failed_open", "exempt", "shadow", "failed_closed", "reset"}

// String returns "allowed", "denied", "failed_open", "exempt", "shadow",
// "failed_closed", "reset", or "none".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "none"
}

// MarshalText returns [Outcome.String], so that an Outcome is written by
// its name in JSON, YAML and logs; an error for a value that is no Outcome.
func (o Outcome) MarshalText() ([]byte, error) {
	if int(o) >= len(outcomeNames) {
		return nil, fmt.Errorf("outcome %d: not an Outcome", uint8(o))
	}
	return []byte(outcomeNames[o]), nil
}

// UnmarshalText sets o to the Outcome whose [Outcome.String] is text. The
// error quotes text and names the forms it accepts.
func (o *Outcome) UnmarshalText(text []byte) error {
	for v, name := range outcomeNames {
		if string(text) == name {
			*o = Outcome(v)
			return nil
		}
	}
	return fmt.Errorf("outcome %q: want %s or %s", text, strings.Join(outcomeNames[:len(outcomeNames)-1], ", "), outcomeNames[len(outcomeNames)-1])
}

// Outcomes returns every Outcome an [Event] can have, OutcomeNone aside, in
// the order of their values: for a metrics exporter that wants each label
// value present from the start. OutcomeReset is among them, though a reset
// is no decision on a request.
func Outcomes() []Outcome {
	return []Outcome{OutcomeAllowed, OutcomeDenied, OutcomeFailedOpen, OutcomeExempt, OutcomeShadow, OutcomeFailedClosed, OutcomeReset}
}

// An Event is what [Config.Observe] receives for each decision: of a
// window scope (Decision) or of a balance scope (Balance); the other is nil.
// It receives one for each reset of a caller's counts too
// ([Limiter.Reset]), with Outcome [OutcomeReset].
// Its methods read whichever is set, for an observer that treats both alike.
type Event struct {
	// Decision is the decision made in a window scope, or nil: a copy of
	// the caller's, made for the hook. Read it during the call; never
	// change or keep it.
	Decision *Decision
	// Balance is the decision made in a balance scope ([Limiter.BalanceGuard]),
	// or nil; shared as Decision is.
	BalanceDecision *BalanceDecision
	// Duration is how long the decision took, store call included, as
	// measured by the monotonic clock (not Config.Now). It is measured only
	// when Config.Observe is set; 0 for an exempt caller, who is decided
	// without the store.
	Duration time.Duration
}

// Scope returns the name of the scope decided.
func (e Event) Scope() string {
	if e.BalanceDecision != nil {
		return e.BalanceDecision.Scope
	}
	return e.Decision.Scope
}

// Caller returns who the request was counted or charged against.
func (e Event) Caller() Caller {
	if e.BalanceDecision != nil {
		return e.BalanceDecision.Caller
	}
	return e.Decision.Caller
}

// Outcome returns what became of the request.
func (e Event) Outcome() Outcome {
	if e.BalanceDecision != nil {
		return e.BalanceDecision.Outcome
	}
	return e.Decision.Outcome
}

// Cost returns the request's cost: the units it used or would have used
// of a window scope, or what it added to the balance.
func (e Event) Cost() int64 {
	if e.BalanceDecision != nil {
		return e.BalanceDecision.Cost
	}
	return e.Decision.Cost
}

// observeBalance calls the hook, if any, with d; start is as for observe.
func (l *Limiter) observeBalance(ctx context.Context, d *BalanceDecision, start time.Time) {
	if l.hook != nil {
		l.emit(ctx, Event{BalanceDecision: d}, start)
	}
}

// observe calls the hook, if any, with a copy of d; start is when the
// decision began (the zero Time if the hook is unset). The hook may keep
// what it gets, against Event's rule, so it never gets d itself: d may be
// an adapter's variable, and stays on its stack when there is no hook.
func (l *Limiter) observe(ctx context.Context, d *Decision, start time.Time) {
	if l.hook != nil {
		seen := *d
		l.emit(ctx, Event{Decision: &seen}, start)
	}
}

// emit calls the hook with e and the time since start (none for the zero
// start of a decision that did not ask the store).
func (l *Limiter) emit(ctx context.Context, e Event, start time.Time) {
	if !start.IsZero() && e.Outcome() != OutcomeExempt {
		e.Duration = time.Since(start)
	}
	l.hook(ctx, e)
}

// start returns the time a decision begins, read only when a hook will
// want the duration.
func (l *Limiter) start() time.Time {
	if l.hook == nil {
		return time.Time{}
	}
	return time.Now()
}
