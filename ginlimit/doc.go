// Package ginlimit limits the rate of requests to a Gin application with a
// [core.Limiter].
//
// # Model
//
// The [core.Limiter] decides; this package only translates. For each
// request the middleware finds who is calling — the signed-in user that
// [Config.User] reads from the context, or else the client address that
// [core.Limiter.Caller] works out from the peer address and, behind as many
// proxies as the limiter's NumProxies says, X-Forwarded-For — asks the
// limiter to count the request in [Config.Scope], and writes what the
// limiter says:
//
//   - allowed: the RateLimit-Policy and RateLimit headers (none when the
//     limiter's core.Config.Headers says refusals only or none), then the next
//     handler runs and may read the decision with [Decision];
//   - over a limit: the same headers, Retry-After, and a 429 Too Many
//     Requests answer with the JSON body {"detail": "...", "retry_after": N}
//     from [Config.DenyHandler]; the next handlers do not run;
//   - exempt ([Config.Exempt]): served, not counted, no headers;
//   - skipped ([Config.Skipper]): served, not counted, no decision;
//   - store failure: served and not counted (fail open), unless
//     [Config.ErrorHandler] aborts;
//   - store failure in a scope that fails closed (core.Config.FailClosedScopes):
//     refused by [Config.DenyHandler] with Retry-After, the decision's
//     Outcome core.OutcomeFailedClosed; [DenyJSON] answers 503 Service
//     Unavailable, and [DenyProblem] answers either refusal as problem
//     details (application/problem+json);
//   - caller on an allowlist (core.Config.ExemptNetworks,
//     core.Config.ExemptUsers): exempt, as the core decides.
//
// The answers are the same, header for header, as those of package
// echolimit for the same requests.
//
// # Usage
//
//	lim, err := core.New(core.Config{
//		Store:      memstore.New(memstore.Config{}),
//		NumProxies: core.Proxies(1), // one load balancer in front
//	})
//	if err != nil { ... }
//	limit, err := ginlimit.New(ginlimit.Config{
//		Limiter: lim,
//		User:    func(c *gin.Context) string { return c.GetString("user") },
//	})
//	if err != nil { ... }
//	r := gin.New()
//	r.GET("/api/records", limit, listRecords)
//
// [New] checks the configuration once and returns an error rather than
// failing requests later; [Must] is the short form for a program that
// cannot start without its limits.
//
// # Groups and route costs
//
// Put one middleware on a group of routes and give routes their own cost
// with [Config.RouteCosts], keyed by route pattern (c.FullPath()): each request is
// decided once, at its route's cost. A cost above the smallest limit is
// clamped to it (see [core.Limiter.AllowN]). [Config.Key] counts callers by
// API key, apart from anonymous callers and user ids.
//
// # Cost
//
// The middleware keeps allocations on the request path to a minimum: the
// [core.Decision] lives on its stack, and is copied into the context only
// with [Config.KeepDecision] (three allocations, about 780 bytes); the
// rest is what the limiter and the headers need (see the allocs target).
//
// A middleware is safe for concurrent use.
package ginlimit
