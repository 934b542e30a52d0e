package core

import "net/http"

// This file holds what a browser client needs: the header names to expose
// through CORS, and refusals as RFC 9457 problem details.

// ExposedHeaders returns the names of the response headers the limiter
// may set, for the CORS setting that lets a script in a browser read them
// (Access-Control-Expose-Headers; gin-contrib/cors's and Echo's
// ExposeHeaders): RateLimit, RateLimit-Policy, Retry-After,
// Ratescope-Warning, and the legacy X-RateLimit-Limit, X-RateLimit-Remaining
// and X-RateLimit-Reset (Config.LegacyHeaders); exposing a header that is
// not sent does no harm. Without them a browser script sees none of these
// headers on a cross-origin answer. It returns a new slice on each call.
func ExposedHeaders() []string {
	return []string{
		"RateLimit", "RateLimit-Policy", "Retry-After", headerWarning,
		"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	}
}

// ProblemContentType is the media type of a [Problem] body (RFC 9457).
const ProblemContentType = "application/problem+json"

// problemQuotaExceeded is the problem type of a refusal over a limit, the
// one the IETF RateLimit header fields draft defines.
const problemQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// A Problem is the body of a refusal as RFC 9457 problem details
// ("application/problem+json", [ProblemContentType]), with the retry time
// as the extension member "retry_after" and, for a 429, the names of the
// limits that refused as "violated-policies", the names RateLimit and
// RateLimit-Policy give them:
//
//	{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
//	 "title":"Too Many Requests","status":429,
//	 "detail":"Request was throttled. Expected available in 7 seconds.",
//	 "retry_after":7,"violated-policies":["api.anon.min"]}
type Problem struct {
	// Type is a URI that names the kind of problem: for a 429, the
	// quota-exceeded type of the RateLimit header fields draft
	// ("https://iana.org/assignments/http-problem-types#quota-exceeded");
	// "about:blank" for the 503 of a scope that failed closed.
	Type string `json:"type"`
	// Title is a short summary of the kind of problem: the status's
	// phrase.
	Title string `json:"title"`
	// Status is the HTTP status code of the answer, as [Decision.Status]
	// says.
	Status int `json:"status"`
	// Detail explains this refusal, as [DenyBody] does.
	Detail string `json:"detail"`
	// RetryAfter is the wait in whole seconds, as in Retry-After.
	RetryAfter int64 `json:"retry_after"`
	// ViolatedPolicies names the limits that refused a 429, as the
	// quota-exceeded problem type defines them; empty for a 503.
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

// Problem returns the problem details of a refusal: for a 429 over a
// limit, or for the 503 of a scope that failed closed. The adapters'
// DenyProblem handlers send it.
func (d *Decision) Problem() Problem {
	b := d.DenyBody()
	status := d.Status()
	p := Problem{Type: problemQuotaExceeded, Title: http.StatusText(status), Status: status, Detail: b.Detail, RetryAfter: b.RetryAfter}
	if status != http.StatusTooManyRequests {
		p.Type = "about:blank"
		return p
	}
	p.ViolatedPolicies = d.violated()
	return p
}
