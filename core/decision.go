package core

import (
	"strconv"
	"time"
)

// A Decision is the answer to one request: whether to serve it, and what to
// tell the caller. Write it with [Decision.SetHeaders]; when it denies,
// answer 429 Too Many Requests with [Decision.DenyBody].
//
// The zero Decision denies and has no limits.
type Decision struct {
	// Allowed reports whether the request may be served: true also in
	// shadow mode for a caller over a limit (Outcome is then
	// OutcomeShadow).
	Allowed bool
	// Outcome says what became of the request: allowed, denied, failed
	// open, exempt, shadow or failed closed. Its String value is fit for a metric label.
	Outcome Outcome
	// Checked reports whether the store checked the request against the
	// limits: true when it was allowed (and counted), denied or let
	// through by shadow mode (neither counted; see [Outcome]), so that
	// [Decision.Limits] and the headers say where the caller stands;
	// false when the store failed (the request allowed anyway, fail
	// open, or refused in a scope that fails closed), or when the caller
	// is exempt (an adapter's Exempt, Config.ExemptNetworks,
	// Config.ExemptUsers). (It was named
	// Counted before issue 18, and was true for refused requests, which
	// are not counted.)
	Checked bool
	// Scope is the name of the scope decided.
	Scope string
	// Caller is the caller the request was decided for.
	Caller Caller
	// Cost is the number of units the request used, or would have used:
	// the route's cost, clamped to the smallest limit of the caller's kind
	// (see [Limiter.AllowN]).
	Cost int64
	// RetryAfter is how long the caller must wait, sending nothing, before
	// the same request is allowed: 0 when it is allowed. In shadow mode it
	// is how long the caller would have had to wait. When the scope failed
	// closed it is how long the store's error says it will fail
	// ([RetryAfterError]), or [defaultStoreRetryAfter]. Send it rounded
	// up to whole seconds, as [Decision.retryAfterSeconds] does: waiting
	// that long is always enough.
	RetryAfter time.Duration
	// Load reports that the caller has used more than the configured
	// share of at least one limit (Config.LoadRatio): a warning that it
	// will soon be refused.
	Load bool
	// StoreErr is the store's error when the decision failed open or
	// failed closed.
	StoreErr error

	limits *kindLimits
	n      int
	res    Result // the store's answer: Limits[:n] are the limits' states

	grant *grant // what a Ticket's decision can give back (guard.go); nil for any other
}

// Limits returns the state of each limit after the request, in the order of
// the scope's rates: empty when the request was not checked
// ([Decision.Checked]).
func (d *Decision) Limits() []LimitStatus {
	return d.res.Limits[:d.n]
}

// Refusing returns the state of the limit that refused the request, the
// one with the longest wait when several did, and true; or false when no
// limit refused it. A shadow decision has one: the limit that would have
// refused.
func (d *Decision) Refusing() (LimitStatus, bool) {
	best := -1
	for i := range d.n {
		if d.res.Limits[i].RetryAfter > 0 && (best < 0 || d.res.Limits[i].RetryAfter > d.res.Limits[best].RetryAfter) {
			best = i
		}
	}
	if best < 0 {
		return LimitStatus{}, false
	}
	return d.res.Limits[best], true
}

// violated returns the names of the limits that have no room for the
// request, as RateLimit writes them but unquoted, or nil.
func (d *Decision) violated() []string {
	var names []string
	for i := range d.n {
		if d.res.Limits[i].RetryAfter > 0 {
			name := d.limits.names[i]
			names = append(names, name[1:len(name)-1])
		}
	}
	return names
}

// retryAfterSeconds returns RetryAfter in whole seconds, rounded up: 0 when
// the request is allowed, at least 1 when it is denied.
func (d *Decision) retryAfterSeconds() int64 {
	if d.Allowed {
		return 0
	}
	return max(ceilSeconds(d.RetryAfter), 1)
}

func ceilSeconds(t time.Duration) int64 {
	return int64((t + time.Second - 1) / time.Second)
}

// DenyBody is the JSON body of a refusal: {"detail": "...", "retry_after": N}.
type DenyBody struct {
	Detail     string `json:"detail"`
	RetryAfter int64  `json:"retry_after"`
}

// DenyBody returns the body to send with a 429 answer, or with the 503 of
// a scope that failed closed ([Decision.Status]), whose detail says that
// the limits cannot be checked.
func (d *Decision) DenyBody() DenyBody {
	if d.Outcome == OutcomeFailedClosed {
		return DenyBody{
			Detail:     "Service unavailable: the rate limits cannot be checked. Expected available in " + strconv.FormatInt(d.retryAfterSeconds(), 10) + " seconds.",
			RetryAfter: d.retryAfterSeconds(),
		}
	}
	return DenyBody{
		Detail:     "Request was throttled. Expected available in " + strconv.FormatInt(d.retryAfterSeconds(), 10) + " seconds.",
		RetryAfter: d.retryAfterSeconds(),
	}
}
