// Package echo5limit limits the rate of requests to an Echo v5 application
// (github.com/labstack/echo/v5) with a [core.Limiter]. Package echolimit
// is the same middleware for Echo v4; the two have the same names and the
// same fields, and give the same answers.
//
// # Model
//
// The [core.Limiter] decides; this package only translates. For each
// request that [Config.Skipper] does not skip, the middleware finds who is
// calling — the key that [Config.Key] reads, the signed-in user that
// [Config.User] reads from the context, or else the client address that
// [core.Limiter.Caller] works out from the peer address and, behind as
// many proxies as the limiter's NumProxies says, X-Forwarded-For — asks
// the limiter to count the request in [Config.Scope], and writes what the
// limiter says:
//
//   - allowed: the RateLimit-Policy and RateLimit headers (none when the
//     limiter's core.Config.Headers says refusals only or none), then the next
//     handler runs and may read the decision with [Decision];
//   - over a limit: the same headers and Retry-After, and the middleware
//     returns the error of [Config.DenyHandler]. The default, [DenyJSON],
//     is an error that Echo v5's error handler writes as 429 with the JSON
//     body {"detail": "...", "retry_after": N}, that echo.StatusCode
//     reads as 429, and that errors.Is matches with [ErrLimited];
//   - exempt ([Config.Exempt]): served, not counted, no headers;
//   - skipped ([Config.Skipper]): served, not counted, no decision;
//   - store failure: served and not counted (fail open), unless
//     [Config.ErrorHandler] returns an error;
//   - store failure in a scope that fails closed (core.Config.FailClosedScopes):
//     refused by [Config.DenyHandler] with Retry-After, the decision's
//     Outcome core.OutcomeFailedClosed; [DenyJSON] answers 503 Service
//     Unavailable, and [DenyProblem] answers either refusal as problem
//     details (application/problem+json);
//   - caller on an allowlist (core.Config.ExemptNetworks,
//     core.Config.ExemptUsers): exempt, as the core decides.
//
// The answers are the same, status, header for header and JSON body, as
// those of packages ginlimit and echolimit for the same requests.
//
// # Usage
//
//	lim, err := core.New(core.Config{
//		Store:      memstore.New(memstore.Config{}),
//		NumProxies: core.Proxies(1), // one load balancer in front
//	})
//	if err != nil { ... }
//	limit, err := echo5limit.New(echo5limit.Config{
//		Limiter: lim,
//		User: func(c *echo.Context) string {
//			user, _ := c.Get("user").(string)
//			return user
//		},
//	})
//	if err != nil { ... }
//	e := echo.New()
//	e.GET("/api/records", listRecords, limit)
//
// [New] checks the configuration once and returns an error rather than
// failing requests later; [Must] is the short form for a program that
// cannot start without its limits.
//
// # Groups and route costs
//
// Put one middleware on a group of routes and give routes their own cost
// with [Config.RouteCosts], keyed by route pattern (c.Path()): each request is
// decided once, at its route's cost. A cost above the smallest limit is
// clamped to it (see [core.Limiter.AllowN]). [Config.Key] counts callers by
// API key, apart from anonymous callers and user ids.
//
// # Balances and WebSockets
//
// A JSON-RPC handler charges each caller's decaying balance with package
// balance, and a WebSocket is served by package wslimit, both on plain
// net/http: an Echo v5 handler passes them c.Response() and c.Request().
//
// # The client address and Echo v5
//
// Since v5.1, Echo's RealIP without an IPExtractor is the peer address: it
// no longer reads X-Forwarded-For. The middleware never uses RealIP, so
// the limits are right either way; but behind a proxy, logs and other
// middleware that read RealIP see the proxy. [CheckClientIP] returns W612
// while the two disagree.
//
// # Cost
//
// The middleware keeps allocations on the request path to a minimum: the
// [core.Decision] lives on its stack, and is copied into the context only
// with [Config.KeepDecision] (three allocations, about 780 bytes); the
// rest is what the limiter and the headers need (see the allocs target).
//
// A middleware is safe for concurrent use.
package echo5limit
