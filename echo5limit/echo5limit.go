package echo5limit

import (
	"encoding/json"
	"errors"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/adapter"
)

// ErrLimited is the error that the error of [DenyJSON] wraps, so that an
// error handler can tell a refusal with errors.Is(err, echo5limit.ErrLimited):
// over a limit, or, with status 503, refused because the store failed in a
// scope that fails closed.
var ErrLimited = errors.New("echo5limit: rate limit exceeded")

// Config configures the middleware built by [New]. Zero fields take the
// defaults stated on each; [New] applies them to a copy.
type Config struct {
	// Skipper skips the middleware for some requests: they are served,
	// not counted, and have no decision. Default: middleware.DefaultSkipper,
	// which skips nothing.
	Skipper middleware.Skipper

	// Limiter decides every request. Required.
	Limiter *core.Limiter

	// Scope is the scope the requests are counted in. Default: "api".
	Scope string

	// Cost is the number of units each request uses, 1 or more; a cost
	// above the smallest limit of a kind of caller is clamped to it (see
	// [core.Limiter.AllowN]). Default: 1.
	Cost int64

	// RouteCosts gives routes a cost of their own, keyed by route pattern as
	// the framework names it (c.Path(), such as "/api/export"); a route
	// it does not name costs Cost. With it, one middleware on a group
	// counts each request once, at its route's cost, instead of a route
	// middleware counting it a second time. Default: none.
	RouteCosts map[string]int64

	// Key returns the key to count the caller by, such as an API key or a
	// plan and key, or "" to count it by User or by address. A caller
	// counted by key has the user limits and a count of its own
	// ([core.KeyCaller]), apart from anonymous callers and from user ids.
	// Default: nil, no caller is counted by key.
	Key func(c *echo.Context) string

	// User returns the id of the signed-in user making the request, as an
	// earlier middleware (session, token) left it in the context, or ""
	// for an anonymous caller. Default: nil, every caller is anonymous.
	User func(c *echo.Context) string

	// Exempt reports whether the caller is exempt from the limits (an
	// administrator, a health checker). An exempt request is served and
	// not counted, and gets no RateLimit headers; with KeepDecision,
	// [Decision] returns its decision, with Allowed true and Checked
	// false. Default: nil, no caller is exempt.
	Exempt func(c *echo.Context, caller core.Caller) bool

	// DenyHandler answers a request over the limit, after the RateLimit
	// and Retry-After headers are set; the middleware returns its error.
	// Default: [DenyJSON].
	DenyHandler func(c *echo.Context, d *core.Decision) error

	// KeepDecision keeps each request's decision in the context, where
	// the handlers after the middleware read it with [Decision]. It costs
	// a copy of the decision and, unless an earlier middleware called
	// c.Set, the store Echo makes on the first c.Set of a request, on every
	// request. Default: false, [Decision] reports no decision; DenyHandler gets the
	// decision whatever this says.
	KeepDecision bool

	// ErrorHandler is called when the store failed and the request was
	// allowed without being counted (fail open); never in a scope that
	// fails closed, whose refusal goes to DenyHandler. Return nil to serve the
	// request, or an error to refuse it with that error. The limiter has
	// already logged the failure. Default: nil, the request is served.
	ErrorHandler func(c *echo.Context, err error) error

	// GiveBack, when not nil, is called after the handler returned, for
	// each request the middleware allowed and counted, and when it returns
	// true the request's units are given back ([core.Limiter.GiveBack]),
	// so that it does not count. A sign-in route that counts only the
	// attempts that failed sets
	//
	//	GiveBack: func(c *echo.Context) bool {
	//		r, err := echo.UnwrapResponse(c.Response())
	//		return err == nil && r.Status < 400
	//	}
	//
	// Each request is counted before the handler runs, so the limit stays
	// strict however many requests are under way at once. It is not
	// called when the handler returned an error: Echo's error handler
	// writes that response later, after the middleware, so the request
	// counts (a failure). Default: nil, every request counts.
	GiveBack func(c *echo.Context) bool
	// Plan returns the plan of the signed-in caller making the request
	// (its account's tier, as an earlier middleware left it in the
	// context), or "" for the scope's own user rates: the caller gets the
	// plan's rates ([core.Scope.Plans], rate keys SCOPE.user@PLAN such as
	// api.user@gold), counted on its one count whatever the plan, and
	// RateLimit-Policy shows them. It is called only for signed-in
	// callers and callers counted by Key. A plan the scope does not have
	// gets the scope's user rates and a warning in the log
	// ([core.Call.Plan]). Default: nil, every signed-in caller has the
	// scope's user rates.
	Plan func(c *echo.Context) string
}

// DefaultConfig returns a Config with every default filled in except the
// Limiter, which must be set.
func DefaultConfig() Config {
	return Config{Skipper: middleware.DefaultSkipper, Scope: core.DefaultScope, Cost: 1, DenyHandler: DenyJSON}
}

// DenyJSON is the default deny handler. It returns an error that Echo v5's
// default error handler writes as 429 Too Many Requests (503 Service
// Unavailable when the scope failed closed: [core.Decision.Status]) with
// the JSON body {"detail": "...", "retry_after": N} (the [core.DenyBody] of
// d): the error reports its status with StatusCode (echo.HTTPStatusCoder,
// so echo.StatusCode(err) is 429), writes its body with MarshalJSON, and
// wraps [ErrLimited]. (Echo v5's *echo.HTTPError carries a text message
// only, so it could not give the body Gin and Echo v4 answer.)
func DenyJSON(_ *echo.Context, d *core.Decision) error {
	return &denyError{body: d.DenyBody(), status: d.Status()}
}

// denyError is the error of [DenyJSON].
type denyError struct {
	body   core.DenyBody
	status int
}

func (e *denyError) Error() string                { return ErrLimited.Error() }
func (e *denyError) Unwrap() error                { return ErrLimited }
func (e *denyError) StatusCode() int              { return e.status }
func (e *denyError) MarshalJSON() ([]byte, error) { return json.Marshal(e.body) }

// DenyProblem is a deny handler that answers as RFC 9457 says: it writes
// the status of [core.Decision.Status] and the problem details of
// [core.Decision.Problem] as "application/problem+json" (type, title,
// status, detail and the extension member retry_after) itself, and
// returns the error of the write (nil when it succeeded). Set it as
// Config.DenyHandler of a JSON API that answers its errors so.
func DenyProblem(c *echo.Context, d *core.Decision) error {
	body, _ := json.Marshal(d.Problem()) // a struct of strings and numbers
	return c.Blob(d.Status(), core.ProblemContentType, body)
}

// adapter returns c in terms of no framework.
func (c *Config) adapter() adapter.Config[*echo.Context] {
	a := adapter.Config[*echo.Context]{Package: "echo5limit", Limiter: c.Limiter, Scope: c.Scope, Cost: c.Cost, RouteCosts: c.RouteCosts,
		Key: c.Key, User: c.User, Plan: c.Plan, Exempt: c.Exempt, GiveBack: c.GiveBack,
		Skip: c.Skipper, Deny: c.DenyHandler, StoreError: c.ErrorHandler}
	if a.Deny == nil {
		a.Deny = DenyJSON
	}
	if c.KeepDecision {
		a.Keep = func(c *echo.Context, d *core.Decision) { c.Set(decisionKey, d) }
	}
	return a
}

// Validate reports what [New] would fail on: no Limiter, an unknown
// scope, a cost or route cost below 1. It builds nothing and logs nothing.
func (c Config) Validate() error { return c.adapter().Validate() }

// decisionKey is the *echo.Context key of the request's decision.
const decisionKey = "github.com/ratescope/ratescope/echo5limit.decision"

// New returns a middleware that counts each request against cfg.Scope and
// refuses it with [Config.DenyHandler]'s error when the caller is over a
// limit. It returns the error of [Config.Validate] instead if cfg is
// invalid, so that no request fails later.
//
// For every counted request it sets the RateLimit-Policy and RateLimit
// headers, and Retry-After when it denies (the limiter's Config.Headers,
// [core.HeaderMode], may keep the fields to refusals or leave only
// Retry-After); with Config.KeepDecision the
// handlers after it read the decision with [Decision]. The caller's
// address comes from [core.Limiter.Caller], which trusts X-Forwarded-For
// only as far as the limiter's NumProxies and TrustedProxies say, never
// from Echo's RealIP.
func New(cfg Config) (echo.MiddlewareFunc, error) {
	m, err := adapter.New(cfg.adapter())
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			return m.Serve(c, c.Request(), c.Path(), c.Response().Header(), next)
		}
	}, nil
}

// Decision returns the decision the middleware made for the request of c,
// and whether there is one: false if the middleware did not run, skipped
// the request, or runs without Config.KeepDecision.
func Decision(c *echo.Context) (*core.Decision, bool) {
	d, ok := c.Get(decisionKey).(*core.Decision)
	return d, ok
}
