package ginlimit

import (
	"encoding/json"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/adapter"
)

// Config configures the middleware built by [New]. Zero fields take the
// defaults stated on each; [New] applies them to a copy.
type Config struct {
	// Skipper skips the middleware for some requests: they are served,
	// not counted, not observed and have no decision. Default: nil, which
	// skips nothing.
	Skipper func(c *gin.Context) bool

	// Limiter decides every request. Required.
	Limiter *core.Limiter

	// Scope is the scope the requests are counted in. Default: "api".
	Scope string

	// Cost is the number of units each request uses, 1 or more; a cost
	// above the smallest limit of a kind of caller is clamped to it (see
	// [core.Limiter.AllowN]). Default: 1.
	Cost int64

	// RouteCosts gives routes a cost of their own, keyed by route pattern
	// as c.FullPath() names it (such as "/api/export"); a route it does
	// not name costs Cost. With it, one middleware on a group counts each
	// request once, at its route's cost. Default: none.
	RouteCosts map[string]int64

	// Key returns the key to count the caller by, such as a checked API
	// key, or "" to count it by User or by address. A caller counted by
	// key ([core.KeyCaller]) has the user limits on a count of its own.
	// Default: nil, no caller is counted by key.
	Key func(c *gin.Context) string

	// User returns the id of the signed-in user making the request, as an
	// earlier middleware (session, token) left it in the context, or ""
	// for an anonymous caller, counted by address. Default: nil, every
	// caller is anonymous.
	User func(c *gin.Context) string

	// Plan returns the plan of a signed-in caller (its account's tier),
	// or "" for the scope's own user rates: the caller gets the plan's
	// rates ([core.Scope.Plans], such as api.user@gold) on its one count.
	// It is called only for signed-in callers and callers counted by Key;
	// a plan the scope does not have gets the user rates and a warning in
	// the log. Default: nil.
	Plan func(c *gin.Context) string

	// Exempt reports whether the caller is exempt from the limits (an
	// administrator). An exempt request is served, not counted, gets no
	// RateLimit headers and is observed with [core.OutcomeExempt].
	// Default: nil, no caller is exempt.
	Exempt func(c *gin.Context, caller core.Caller) bool

	// DenyHandler answers a refused request, after the RateLimit and
	// Retry-After headers are set: over a limit, or with d.Outcome
	// [core.OutcomeFailedClosed] when the store failed in a scope that
	// fails closed. The middleware aborts the context after it. Default:
	// [DenyJSON]; [DenyProblem] answers with problem details.
	DenyHandler func(c *gin.Context, d *core.Decision)

	// KeepDecision keeps each request's decision in the context for
	// [Decision], at the cost of a copy of the decision and Gin's key map
	// on every request. Default: false; DenyHandler gets the decision
	// whatever this says.
	KeepDecision bool

	// ErrorHandler is called when the store failed and the request was
	// allowed uncounted (fail open; a scope that fails closed refuses
	// through DenyHandler); abort the context to refuse it. The limiter
	// has already logged the error. Default: nil, the request is served.
	ErrorHandler func(c *gin.Context, err error)

	// GiveBack, when not nil, is called after the handlers ran for each
	// request that was allowed and counted; true gives its units back
	// ([core.Limiter.GiveBack]), so that it does not count. A sign-in route
	// that counts only failures sets
	//
	//	GiveBack: func(c *gin.Context) bool { return c.Writer.Status() < 400 }
	//
	// Each request is counted before the handlers run, so the limit stays
	// strict however many are under way. Default: nil, every request
	// counts.
	GiveBack func(c *gin.Context) bool
}

// DefaultConfig returns a Config with every default filled in except the
// Limiter, which must be set.
func DefaultConfig() Config {
	return Config{Scope: core.DefaultScope, Cost: 1, DenyHandler: DenyJSON}
}

// DenyJSON is the default deny handler: it aborts with the status of
// [core.Decision.Status] (429, or 503 when the scope failed closed) and
// the JSON body of [core.Decision.DenyBody].
func DenyJSON(c *gin.Context, d *core.Decision) {
	c.AbortWithStatusJSON(d.Status(), d.DenyBody())
}

// DenyProblem is a deny handler that aborts with the status of
// [core.Decision.Status] and the RFC 9457 problem details of
// [core.Decision.Problem] as "application/problem+json".
func DenyProblem(c *gin.Context, d *core.Decision) {
	body, _ := json.Marshal(d.Problem()) // a struct of strings and numbers
	c.Data(d.Status(), core.ProblemContentType, body)
	c.Abort()
}

// Validate reports what [New] would fail on: no Limiter, an unknown
// scope, a cost or route cost below 1. It builds nothing and logs nothing.
func (c Config) Validate() error { return c.adapter().Validate() }

// adapter returns c in terms of no framework.
func (c *Config) adapter() adapter.Config[*gin.Context] {
	deny := c.DenyHandler
	if deny == nil {
		deny = DenyJSON
	}
	a := adapter.Config[*gin.Context]{Package: "ginlimit", Limiter: c.Limiter, Scope: c.Scope, Cost: c.Cost, RouteCosts: c.RouteCosts,
		Key: c.Key, User: c.User, Plan: c.Plan, Exempt: c.Exempt, GiveBack: c.GiveBack, Skip: c.Skipper,
		Deny: func(c *gin.Context, d *core.Decision) error { deny(c, d); c.Abort(); return nil }}
	if h := c.ErrorHandler; h != nil {
		a.StoreError = func(c *gin.Context, err error) error { h(c, err); return nil } // an aborted context runs no handler
	}
	if c.KeepDecision {
		a.Keep = func(c *gin.Context, d *core.Decision) { c.Set(decisionKey{}, d) }
	}
	return a
}

type decisionKey struct{}

// New returns a middleware that counts each request against cfg.Scope and
// aborts with 429 Too Many Requests when the caller is over a limit, or
// the error of [Config.Validate] if cfg is invalid. It sets the RateLimit
// headers the limiter's header policy asks for, and Retry-After when it
// denies. The caller's address comes from [core.Limiter.Caller], never
// from Gin's ClientIP.
func New(cfg Config) (gin.HandlerFunc, error) {
	m, err := adapter.New(cfg.adapter())
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		_ = m.Serve(c, c.Request, c.FullPath(), c.Writer.Header(), next)
	}, nil
}

// next runs the handlers after the middleware.
func next(c *gin.Context) error {
	c.Next()
	return nil
}

// Decision returns the decision the middleware made for the request of c,
// and whether there is one: false if the middleware did not run, skipped
// the request, or runs without Config.KeepDecision.
func Decision(c *gin.Context) (*core.Decision, bool) {
	v, ok := c.Get(decisionKey{})
	if !ok {
		return nil, false
	}
	d, ok := v.(*core.Decision)
	return d, ok
}
