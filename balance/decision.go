package balance

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/ratescope/ratescope/core"
)

// A Decision is the answer to one request in a balance scope.
//
// The zero Decision refuses.
type Decision struct {
	// Allowed reports whether the request may be served: false when the
	// caller is dropped, or when the store failed in a scope that fails
	// closed (Outcome [core.OutcomeFailedClosed]). Answer a WebSocket
	// caller with a close of code 1008 (package wslimit; 1013 when failed
	// closed) and a JSON-RPC caller with 503 ([WriteOverloaded]).
	Allowed bool
	// Load reports that the caller is warned: at or above the warning
	// threshold, and not warned in the last Policy.WarnEvery (so at most
	// once a second by default, not on every reply). Add "warning":"load"
	// to the reply ([WarnJSON]).
	Load bool
	// Outcome is what became of the request: [core.OutcomeAllowed],
	// [core.OutcomeDenied] (dropped), [core.OutcomeFailedOpen],
	// [core.OutcomeExempt] or [core.OutcomeFailedClosed].
	Outcome core.Outcome
	// headers is the limiter's Config.Headers; zero, HeadersAll, in a
	// Decision made by hand.
	headers core.HeaderMode
	// Balance is the caller's balance after the request; 0 when the store
	// did not decide it (the caller is exempt, or the store failed).
	Balance int64
	// StoreErr is the store's error when the decision failed open or
	// failed closed.
	StoreErr error
}

// SetHeaders writes "Ratescope-Warning: load" (["Ratescope-Warning"]) to h
// when the caller is warned (Load), Retry-After (whole
// seconds, rounded up) when the scope failed closed, and nothing
// otherwise. The warning is on a served request only, so that with the
// limiter's Config.Headers at [core.HeadersRefused] or [core.HeadersNone]
// it writes nothing (the reply's "warning":"load", [WarnJSON],
// stays); Retry-After is written whatever it says.
func (d *Decision) SetHeaders(h http.Header) {
	if d.Load && d.headers == core.HeadersAll {
		h["Ratescope-Warning"] = []string{"load"}
	}
	if d.Outcome == core.OutcomeFailedClosed {
		secs := int64((d.RetryAfter() + time.Second - 1) / time.Second)
		h["Retry-After"] = []string{strconv.FormatInt(max(secs, 1), 10)}
	}
}

// RetryAfter returns, when the scope failed closed
// ([core.OutcomeFailedClosed]), how long the store's error says it will
// fail ([core.RetryAfterError]), or [time.Second]; 0
// otherwise. It is read from StoreErr, so that a decision carries no field
// for it.
func (d *Decision) RetryAfter() time.Duration {
	if d.Outcome != core.OutcomeFailedClosed {
		return 0
	}
	var ra core.RetryAfterError
	if errors.As(d.StoreErr, &ra) && ra.RetryAfter() > 0 {
		return ra.RetryAfter()
	}
	return time.Second
}

// WriteOverloaded answers a refused JSON-RPC request as the XRP Ledger
// server does: 503 Service Unavailable with the text body "Server is
// overloaded". Call it when a Decision is not Allowed, after
// [Decision.SetHeaders]; it serves as well as the deny handler of a window
// limit of a JSON-RPC route (with the adapter's response writer).
func WriteOverloaded(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, "Server is overloaded")
}
