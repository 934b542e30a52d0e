package ginlimit

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/guards"
)

// BalanceConfig configures the middleware built by [NewBalance], which
// limits a route group by a decaying balance of request costs (the XRP
// Ledger server's model, [core.BalanceScope]), as a JSON-RPC API is. It
// has the shape of [Config]; zero fields take the defaults stated on each,
// those of [DefaultBalanceConfig].
type BalanceConfig struct {
	// Skipper skips the middleware for some requests: they are served,
	// not charged, not observed and have no decision. Default: nil, which
	// skips nothing.
	Skipper func(c *gin.Context) bool

	// Limiter charges the requests. Required.
	Limiter *core.Limiter

	// Scope is the balance scope the requests are charged in, one of the
	// limiter's Config.Balances. Required: balance scopes have no default.
	Scope string

	// Cost returns the cost of the request, 0 or more (a cost below 0 is
	// 0): for JSON-RPC, by its method (the body may be read if it is put
	// back), such as one of the scope's cost classes. Default: nil, every
	// request costs the scope's Costs.Reference.
	Cost func(c *gin.Context) int64

	// Key and User find the caller, as for [Config]: use the same
	// functions. Default: nil, callers are counted by address.
	Key  func(c *gin.Context) string
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

// DefaultBalanceConfig returns a BalanceConfig with every default filled
// in except the Limiter and the Scope, which must be set.
func DefaultBalanceConfig() BalanceConfig {
	return BalanceConfig{DenyHandler: denyOverloadedBalance}
}

// Validate reports the problem with c, if any: a missing Limiter, or a
// Scope that is no balance scope of it.
func (c BalanceConfig) Validate() error {
	_, err := c.guard()
	return err
}

// guard returns the [core.BalanceGuard] that charges the middleware's
// requests.
func (c BalanceConfig) guard() (*core.BalanceGuard, error) {
	return guards.Balance("ginlimit", c.Limiter, c.Scope)
}

// balanceKey is the gin.Context key of the request's balance decision.
type balanceKey struct{}

// NewBalance returns a middleware that charges each request to the
// caller's balance in cfg.Scope, sets "Ratescope-Warning: load" when the
// caller is warned, and refuses the requests of a dropped caller with
// cfg.DenyHandler. The handlers after it read the decision with
// [BalanceDecision], and add "warning":"load" to their reply when its Load
// is true ([core.WarnJSON]). It returns the error of
// [BalanceConfig.Validate] instead if cfg is invalid.
func NewBalance(cfg BalanceConfig) (gin.HandlerFunc, error) {
	guard, err := cfg.guard()
	if err != nil {
		return nil, err
	}
	if cfg.DenyHandler == nil {
		cfg.DenyHandler = DefaultBalanceConfig().DenyHandler
	}
	reference := guard.Scope().Costs.Reference
	hooks := guards.Hooks[*gin.Context]{Limiter: cfg.Limiter, Key: cfg.Key, User: cfg.User, Exempt: cfg.Exempt}
	return func(c *gin.Context) {
		if cfg.Skipper != nil && cfg.Skipper(c) {
			return
		}
		caller := hooks.Caller(c, c.Request)
		var d *core.BalanceDecision
		if hooks.IsExempt(c, caller) {
			d = guard.Exempt(c.Request.Context(), caller)
		} else {
			cost := reference
			if cfg.Cost != nil {
				cost = cfg.Cost(c)
			}
			d = guard.Charge(c.Request.Context(), caller, cost)
			d.SetHeaders(c.Writer.Header())
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

// denyOverloadedBalance is the default deny handler of [NewBalance].
func denyOverloadedBalance(c *gin.Context, _ *core.BalanceDecision) { overloaded(c) }

// overloadedBody is the text body of a request refused with 503, as the XRP
// Ledger server's JSON-RPC API answers it.
const overloadedBody = "Server is overloaded"

func overloaded(c *gin.Context) {
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.String(http.StatusServiceUnavailable, overloadedBody)
	c.Abort()
}
