package echolimit

import (
	"encoding/json"
	"errors"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/adapter"
)

// ErrLimited is the internal error of the *echo.HTTPError that [DenyJSON]
// returns, so that an error handler can tell a refusal with
// errors.Is(err, echolimit.ErrLimited): over a limit, or, with code 503,
// refused because the store failed in a scope that fails closed.
var ErrLimited = errors.New("echolimit: rate limit exceeded")

// Config configures the middleware built by [New]. Zero fields take the
// defaults stated on each; [New] applies them to a copy.
type Config struct {
	// Skipper skips the middleware for some requests: they are served,
	// not counted, not observed and have no decision. Default:
	// middleware.DefaultSkipper, which skips nothing.
	Skipper middleware.Skipper

	// Limiter decides every request. Required.
	Limiter *core.Limiter

	// Scope is the scope the requests are counted in. Default: "api".
	Scope string

	// Cost is the number of units each request uses, 1 or more; a cost
	// above the smallest limit of a kind of caller is clamped to it (see
	// [core.Limiter.AllowN]). Default: 1.
	Cost int64

	// RouteCosts gives routes a cost of their own, keyed by route pattern
	// as c.Path() names it (such as "/api/export"); a route it does not
	// name costs Cost. With it, one middleware on a group counts each
	// request once, at its route's cost. Default: none.
	RouteCosts map[string]int64

	// Key returns the key to count the caller by, such as a checked API
	// key, or "" to count it by User or by address. A caller counted by
	// key ([core.KeyCaller]) has the user limits on a count of its own.
	// Default: nil, no caller is counted by key.
	Key func(c echo.Context) string

	// User returns the id of the signed-in user making the request, as an
	// earlier middleware (session, token) left it in the context, or ""
	// for an anonymous caller, counted by address. Default: nil, every
	// caller is anonymous.
	User func(c echo.Context) string

	// Plan returns the plan of a signed-in caller (its account's tier),
	// or "" for the scope's own user rates: the caller gets the plan's
	// rates ([core.Scope.Plans], such as api.user@gold) on its one count.
	// It is called only for signed-in callers and callers counted by Key;
	// a plan the scope does not have gets the user rates and a warning in
	// the log. Default: nil.
	Plan func(c echo.Context) string

	// Exempt reports whether the caller is exempt from the limits (an
	// administrator). An exempt request is served, not counted, gets no
	// RateLimit headers and is observed with [core.OutcomeExempt].
	// Default: nil, no caller is exempt.
	Exempt func(c echo.Context, caller core.Caller) bool

	// DenyHandler answers a refused request, after the RateLimit and
	// Retry-After headers are set: over a limit, or with d.Outcome
	// [core.OutcomeFailedClosed] when the store failed in a scope that
	// fails closed. The middleware returns its error. Default:
	// [DenyJSON]; [DenyProblem] answers with problem details.
	DenyHandler func(c echo.Context, d *core.Decision) error

	// KeepDecision keeps each request's decision in the context for
	// [Decision], at the cost of a copy of the decision and Echo's store
	// on every request. Default: false; DenyHandler gets the decision
	// whatever this says.
	KeepDecision bool

	// ErrorHandler is called when the store failed and the request was
	// allowed uncounted (fail open; a scope that fails closed refuses
	// through DenyHandler); return an error to refuse it with that error,
	// nil to serve it. The limiter has already logged the failure.
	// Default: nil, the request is served.
	ErrorHandler func(c echo.Context, err error) error

	// GiveBack, when not nil, is called after the handler returned nil,
	// for each request that was allowed and counted; true gives its units
	// back ([core.Limiter.GiveBack]), so that it does not count. A sign-in
	// route that counts only failures sets
	//
	//	GiveBack: func(c echo.Context) bool { return c.Response().Status < 400 }
	//
	// A handler's error is written later by Echo's error handler, so that
	// request counts. Each request is counted before the handler runs, so
	// the limit stays strict however many are under way. Default: nil,
	// every request counts.
	GiveBack func(c echo.Context) bool
}

// DefaultConfig returns a Config with every default filled in except the
// Limiter, which must be set.
func DefaultConfig() Config {
	return Config{Skipper: middleware.DefaultSkipper, Scope: core.DefaultScope, Cost: 1, DenyHandler: DenyJSON}
}

// DenyJSON is the default deny handler. It returns an *echo.HTTPError with
// the code of [core.Decision.Status] (429, or 503 when the scope failed
// closed), the [core.DenyBody] of d as its Message, which Echo's error
// handler writes as JSON, and [ErrLimited] as its Internal error.
func DenyJSON(_ echo.Context, d *core.Decision) error {
	return &echo.HTTPError{Code: d.Status(), Message: d.DenyBody(), Internal: ErrLimited}
}

// DenyProblem is a deny handler that writes the status of
// [core.Decision.Status] and the RFC 9457 problem details of
// [core.Decision.Problem] as "application/problem+json" itself, and
// returns the error of the write.
func DenyProblem(c echo.Context, d *core.Decision) error {
	body, _ := json.Marshal(d.Problem()) // a struct of strings and numbers
	return c.Blob(d.Status(), core.ProblemContentType, body)
}

// Validate reports what [New] would fail on: no Limiter, an unknown
// scope, a cost or route cost below 1. It builds nothing and logs nothing.
func (c Config) Validate() error { return c.adapter().Validate() }

// adapter returns c in terms of no framework.
func (c *Config) adapter() adapter.Config[echo.Context] {
	a := adapter.Config[echo.Context]{Package: "echolimit", Limiter: c.Limiter, Scope: c.Scope, Cost: c.Cost, RouteCosts: c.RouteCosts,
		Key: c.Key, User: c.User, Plan: c.Plan, Exempt: c.Exempt, GiveBack: c.GiveBack,
		Skip: c.Skipper, Deny: c.DenyHandler, StoreError: c.ErrorHandler}
	if a.Deny == nil {
		a.Deny = DenyJSON
	}
	if c.KeepDecision {
		a.Keep = func(c echo.Context, d *core.Decision) { c.Set(decisionKey, d) }
	}
	return a
}

// decisionKey is the echo.Context key of the request's decision.
const decisionKey = "github.com/ratescope/ratescope/echolimit.decision"

// New returns a middleware that counts each request against cfg.Scope and
// refuses it with [Config.DenyHandler]'s error when the caller is over a
// limit, or the error of [Config.Validate] if cfg is invalid. It sets the
// RateLimit headers the limiter's header policy asks for, and Retry-After
// when it denies. The caller's address comes from [core.Limiter.Caller],
// never from Echo's RealIP.
func New(cfg Config) (echo.MiddlewareFunc, error) {
	m, err := adapter.New(cfg.adapter())
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			return m.Serve(c, c.Request(), c.Path(), c.Response().Header(), next)
		}
	}, nil
}

// Decision returns the decision the middleware made for the request of c,
// and whether there is one: false if the middleware did not run, skipped
// the request, or runs without Config.KeepDecision.
func Decision(c echo.Context) (*core.Decision, bool) {
	d, ok := c.Get(decisionKey).(*core.Decision)
	return d, ok
}
