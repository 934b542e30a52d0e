package core

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// This file holds failing closed: Scope.FailClosed.

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
// of package balance) in scope, as the limiter's own: closed says that the
// request was refused because the scope fails closed, rather than allowed
// uncounted. An error of a caller that hung up (its context's) is neither
// counted nor logged.
func (l *Limiter) StoreFailed(ctx context.Context, scope string, err error, closed bool) {
	l.storeFailed(ctx, l.now(), scope, err, closed)
}

// failClosed fills d, whose scope fails closed, with the refusal of a
// request the store could not decide.
func (l *Limiter) failClosed(ctx context.Context, now time.Time, d *Decision, err error) {
	l.storeFailed(ctx, now, d.Scope, err, true)
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
