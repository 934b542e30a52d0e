package echo5limit

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

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
	Cost func(c *echo.Context) int64

	// User returns the signed-in user's id, as for [Config]. Default: nil,
	// every caller is anonymous.
	User func(c *echo.Context) string

	// Exempt reports whether the caller is exempt, as for [Config]: use
	// the same predicate. An exempt caller is never charged, warned or
	// dropped. Default: nil, no caller is exempt.
	Exempt func(c *echo.Context, caller core.Caller) bool

	// DenyHandler answers a request of a dropped caller; the middleware
	// returns its error. Default: 503 Service Unavailable with the text
	// body "Server is overloaded", as [DenyOverloaded].
	DenyHandler func(c *echo.Context, d *core.BalanceDecision) error
}

// balanceKey is the echo.Context key of the request's balance decision.
const balanceKey = "github.com/ratescope/ratescope/echo5limit.balance"

// NewBalance returns a middleware that charges each request to the
// caller's balance in cfg.Balance's scope, sets "Ratescope-Warning: load"
// when the caller is warned, and refuses the requests of a dropped caller
// with cfg.DenyHandler. The handlers after it read the decision with
// [BalanceDecision], and add "warning":"load" to their reply when its Load
// is true ([core.WarnJSON]).
func NewBalance(cfg BalanceConfig) (echo.MiddlewareFunc, error) {
	if cfg.Balance == nil {
		return nil, errors.New("echo5limit: no Balance: build one with core.Limiter.Balance")
	}
	if cfg.DenyHandler == nil {
		cfg.DenyHandler = func(c *echo.Context, _ *core.BalanceDecision) error { return overloaded(c) }
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			var user string
			if cfg.User != nil {
				user = cfg.User(c)
			}
			caller := cfg.Balance.Caller(c.Request(), user)
			var d *core.BalanceDecision
			if cfg.Exempt != nil && cfg.Exempt(c, caller) {
				d = cfg.Balance.Exempt(c.Request().Context(), caller)
			} else {
				cost := int64(-1) // the scope's reference cost
				if cfg.Cost != nil {
					cost = cfg.Cost(c)
				}
				d = cfg.Balance.Decide(c.Request().Context(), caller, cost, c.Response().Header())
			}
			c.Set(balanceKey, d)
			if !d.Allowed {
				return cfg.DenyHandler(c, d)
			}
			return next(c)
		}
	}, nil
}

// BalanceDecision returns the decision the [NewBalance] middleware made for
// the request of c, and whether there is one.
func BalanceDecision(c *echo.Context) (*core.BalanceDecision, bool) {
	d, ok := c.Get(balanceKey).(*core.BalanceDecision)
	return d, ok
}

// DenyOverloaded is a deny handler for window limits that answers as the
// XRP Ledger server's JSON-RPC API does: 503 Service Unavailable and the
// text body "Server is overloaded" (after the RateLimit and Retry-After
// headers), instead of 429 with JSON. Set it as Config.DenyHandler of a
// JSON-RPC route group.
func DenyOverloaded(c *echo.Context, _ *core.Decision) error { return overloaded(c) }

func overloaded(c *echo.Context) error {
	return c.String(http.StatusServiceUnavailable, core.OverloadedBody)
}
