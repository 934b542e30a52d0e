package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// This file holds what a scope does when the store fails: Scope.FailMode.
// Deciding in memory is in local.go.

// A FailMode says what a scope does with a request its store could not
// decide: it failed, or its breaker is open (see [Scope.FailMode]). Its
// text form is "open", "closed" or "local". The zero value is FailOpen.
//
// A request whose store is reachable but answers late (its error wraps
// [ErrLate]) is decided in the process's memory, as FailLocal decides it,
// in a scope that fails open too: rather than served uncounted. A scope
// that fails closed refuses it.
type FailMode uint8

const (
	// FailOpen serves the request without counting it, with outcome
	// [OutcomeFailedOpen]: the default, right for an API, whose limits
	// must not become the reason it is down.
	FailOpen FailMode = iota
	// FailClosed refuses the request with 503 Service Unavailable, outcome
	// [OutcomeFailedClosed]: for a sign-in form or a payment, where an
	// unlimited request costs more than a refused one.
	FailClosed
	// FailLocal decides the request in the process's memory with the
	// scope's limits divided by [Config.Processes], outcome
	// [OutcomeLocal], and carries what it counted into the store once the
	// store answers again, for the windows still open. Each process counts
	// apart: while the store is down, a caller gets at most Processes ×
	// (limit / Processes) of each limit beyond what the store had counted.
	FailLocal
)

var failModeNames = [...]string{"open", "closed", "local"}

// String returns "open", "closed" or "local".
func (m FailMode) String() string {
	if int(m) < len(failModeNames) {
		return failModeNames[m]
	}
	return "FailMode(" + strconv.Itoa(int(m)) + ")"
}

// MarshalText returns [FailMode.String]; an error for a value that is no
// FailMode.
func (m FailMode) MarshalText() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return []byte(failModeNames[m]), nil
}

// UnmarshalText sets m to the FailMode named text: "open", "closed" or
// "local". The error quotes text and names the forms it accepts.
func (m *FailMode) UnmarshalText(text []byte) error {
	for v, name := range failModeNames {
		if string(text) == name {
			*m = FailMode(v)
			return nil
		}
	}
	return fmt.Errorf("fail mode %q: want open, closed or local", text)
}

func (m FailMode) validate() error {
	if int(m) >= len(failModeNames) {
		return fmt.Errorf("fail mode %d: want FailOpen, FailClosed or FailLocal", uint8(m))
	}
	return nil
}

// resolveFailModes checks the scopes' fail modes and [Config.Processes]:
// a value that is no FailMode, a negative Processes, and a scope that
// fails local whose smallest limit would leave a process nothing.
func (c Config) resolveFailModes(scopes map[string]*Scope) []error {
	var errs []error
	if c.Processes < 0 {
		errs = append(errs, &ConfigError{ID: idOutOfRange, Err: fmt.Errorf("Processes %d: want 1 or more (0 for 1)", c.Processes)})
	}
	n := max(int64(c.Processes), 1)
	for _, name := range sortedNames(scopes) {
		s := scopes[name]
		if err := s.FailMode.validate(); err != nil {
			errs = append(errs, scopeErr("scope %q: %w", name, err))
			continue
		}
		if s.FailMode != FailLocal || n == 1 {
			continue
		}
		for kind, rates := range [2][]Rate{s.Anon, s.User} {
			for _, r := range rates {
				if r.Limit < n {
					errs = append(errs, &ConfigError{ID: idOutOfRange, Err: fmt.Errorf("scope %q fails local: %s.%s %s divided among Processes %d leaves a process nothing; lower Processes or raise the limit", name, name, Kind(kind), r, n)})
				}
			}
		}
	}
	return errs
}

// A RetryAfterError is a store error that knows how long the store will
// go on failing: the Redis store's error while its circuit breaker is open
// says the breaker's back-off. A scope that fails closed answers
// Retry-After with it; [defaultStoreRetryAfter] when the error is not
// one (errors.As finds it through wrapping).
type RetryAfterError interface {
	error
	// RetryAfter returns how long to wait before the store may answer
	// again, above 0.
	RetryAfter() time.Duration
}

// defaultStoreRetryAfter is how long a scope that fails closed tells its
// callers to wait (Retry-After) when the store's error does not say
// ([RetryAfterError]): one second.
const defaultStoreRetryAfter = time.Second

// storeRetryAfter returns how long the store's error says to wait, or
// defaultStoreRetryAfter.
func storeRetryAfter(err error) time.Duration {
	var ra RetryAfterError
	if errors.As(err, &ra) {
		if d := ra.RetryAfter(); d > 0 {
			return d
		}
	}
	return defaultStoreRetryAfter
}

// StoreFailed counts ([Limiter.StoreFailures]) and logs, at a limited
// rate, a store error of a limit kept beside the Limiter (a balance scope
// of package balance) in scope, as the limiter's own: o is what became of
// the request, [OutcomeFailedOpen] (allowed uncounted) or
// [OutcomeFailedClosed] (refused because the scope fails closed). An error
// of a caller that hung up (its context's) is neither counted nor logged.
func (l *Limiter) StoreFailed(ctx context.Context, scope string, err error, o Outcome) {
	l.storeFailed(ctx, l.now(), scope, err, o)
}

// failClosed fills d, whose scope fails closed, with the refusal of a
// request the store could not decide.
func (l *Limiter) failClosed(ctx context.Context, now time.Time, d *Decision, err error) {
	l.storeFailed(ctx, now, d.Scope, err, OutcomeFailedClosed)
	d.Allowed = false
	d.Outcome = OutcomeFailedClosed
	d.StoreErr = err
	d.RetryAfter = storeRetryAfter(err)
}

// Status returns the HTTP status to answer the request with: 200 OK when
// it is allowed, 503 Service Unavailable when the store failed and the
// scope fails closed ([OutcomeFailedClosed]), 429 Too Many Requests
// otherwise.
func (d *Decision) Status() int {
	switch {
	case d.Allowed:
		return http.StatusOK
	case d.Outcome == OutcomeFailedClosed:
		return http.StatusServiceUnavailable
	}
	return http.StatusTooManyRequests
}
