package core

import (
	"fmt"
	"strings"
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
	// ([FailClosed]): the request was refused,
	// with 503 Service Unavailable rather than 429, and not counted.
	OutcomeFailedClosed
	// OutcomeReset is no decision on a request: an operator cleared the
	// caller's counts in the scope ([Limiter.Reset]). Its Event has only
	// Scope, Caller and Outcome set (and a Decision of them for a window
	// scope): a Cost of 0, nothing allowed.
	OutcomeReset
	// OutcomeLocal: the store answered late (its error wraps [ErrLate]) in
	// a scope that does not fail closed, or failed in a scope that fails
	// local ([FailLocal]), and the request
	// was decided in the process's memory with the scope's limits:
	// Decision.Allowed says whether it was served. So is a request the
	// store allowed while requests decided in memory before, which it has
	// not counted yet, leave no room: it is refused and given back. A served request is
	// counted in that memory, and carried into the store once it answers
	// again when the store had failed.
	OutcomeLocal
)

var outcomeNames = [...]string{"none", "allowed", "denied", "failed_open", "exempt", "shadow", "failed_closed", "reset", "local"}

// String returns "allowed", "denied", "failed_open", "exempt", "shadow",
// "failed_closed", "reset", "local", or "none".
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
	return []Outcome{OutcomeAllowed, OutcomeDenied, OutcomeFailedOpen, OutcomeExempt, OutcomeShadow, OutcomeFailedClosed, OutcomeReset, OutcomeLocal}
}
