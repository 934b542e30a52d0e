package ginlimit

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
)

// BalanceConfig configures the middleware built by [NewBalance], which
// limits a route group by a decaying balance of request costs (the XRP
// Ledger server's model, [core.BalanceScope]), as a JSON-RPC API is. Zero
// fields take the defaults stated on each.
type BalanceConfig struct {
	// Balance charges the requests: a balance scope of the limiter, from
	// [core.Limiter.Balance]. Required.
	Balance *core.Balance

	// Cost returns the cost of the request: for JSON-RPC, by its method
	// (the body may be read if it is put back); a negative cost is the
	// scope's Costs.Reference. Default: nil, every request costs
	// Costs.Reference.
	Cost func(c *gin.Context) int64

	// User returns the signed-in user's id, as for [Config]. Default: nil,
	// every caller is anonymous.
	User func(c *gin.Context) string

	// Exempt reports whether the caller is exempt, as for [Config]: use
	// the same predicate. An exempt caller is never charged, warned or
	// dropped. Default: nil, no caller is exempt.
	Exempt func(c *gin.Context, caller core.Caller) bool

	// DenyHandler answers a request of a dropped caller; the middleware
	// aborts the context after it. Default: 503 Service Unavailable with
	// the text body "Server is overloaded", as [DenyOverloaded].
	DenyHandler func(c *gin.Context, d *core.BalanceDecision)
}

// balanceKey is the gin.Context key of the request's balance decision.
type balanceKey struct{}

// NewBalance returns a middleware that charges each request to the
// caller's balance in cfg.Balance's scope, sets "Ratescope-Warning: load"
// when the caller is warned, and refuses the requests of a dropped caller
// with cfg.DenyHandler. The handlers after it read the decision with
// [BalanceDecision], and add "warning":"load" to their reply when its Load
// is true ([core.WarnJSON]).
func NewBalance(cfg BalanceConfig) (gin.HandlerFunc, error) {
	if cfg.Balance == nil {
		return nil, errors.New("ginlimit: no Balance: build one with core.Limiter.Balance")
	}
	if cfg.DenyHandler == nil {
		cfg.DenyHandler = func(c *gin.Context, _ *core.BalanceDecision) { overloaded(c) }
	}
	return func(c *gin.Context) {
		var user string
		if cfg.User != nil {
			user = cfg.User(c)
		}
		caller := cfg.Balance.Caller(c.Request, user)
		var d *core.BalanceDecision
		if cfg.Exempt != nil && cfg.Exempt(c, caller) {
			d = cfg.Balance.Exempt(c.Request.Context(), caller)
		} else {
			cost := int64(-1) // the scope's reference cost
			if cfg.Cost != nil {
				cost = cfg.Cost(c)
			}
			d = cfg.Balance.Decide(c.Request.Context(), caller, cost, c.Writer.Header())
		}
		c.Set(balanceKey{}, d)
		if !d.Allowed {
			cfg.DenyHandler(c, d)
			c.Abort()
		}
	}, nil
}

// BalanceDecision returns the decision the [NewBalance] middleware made for
// the request of c, and whether there is one.
func BalanceDecision(c *gin.Context) (*core.BalanceDecision, bool) {
	v, ok := c.Get(balanceKey{})
	if !ok {
		return nil, false
	}
	d, ok := v.(*core.BalanceDecision)
	return d, ok
}

// DenyOverloaded is a deny handler for window limits that answers as the
// XRP Ledger server's JSON-RPC API does: it aborts with 503 Service
// Unavailable and the text body "Server is overloaded" (after the
// RateLimit and Retry-After headers), instead of 429 with JSON. Set it as
// Config.DenyHandler of a JSON-RPC route group.
func DenyOverloaded(c *gin.Context, _ *core.Decision) { overloaded(c) }

// overloadedBody is the text body of a request refused with 503, as the XRP
// Ledger server's JSON-RPC API answers it.
const overloadedBody = "Server is overloaded"

func overloaded(c *gin.Context) {
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.String(http.StatusServiceUnavailable, overloadedBody)
	c.Abort()
}
