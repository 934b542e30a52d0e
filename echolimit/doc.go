// Package echolimit is the rate-limiting middleware for Echo v4
// (github.com/labstack/echo/v4): use it to put a [core.Limiter]'s limits in
// front of Echo v4 routes; echo5limit is the same for Echo v5. The core
// decides who the caller is, whether the request is allowed and what
// headers to write (see [core] for the model); this package reads the
// caller from the Echo context and answers as the decision says.
//
// # Use
//
// [New] builds the middleware from a [Config], checked once, so that a
// wrong setting fails at start-up rather than on a request. Set
// [Config.User] to the signed-in user your session or token middleware
// found, or [Config.Key] to count by API key; a request with neither is
// counted by address. Put one middleware on a group and give routes their
// own cost with [Config.RouteCosts], keyed by c.Path(): each request is
// decided once. [Config.Plan] chooses a signed-in caller's plan,
// [Config.GiveBack] counts only the requests that fail (a sign-in form),
// and [Config.KeepDecision] keeps the decision for handlers ([Decision]).
//
// # Answers
//
// An allowed request gets the rate-limit fields and runs the next handler.
// A refused one returns the error of [Config.DenyHandler] for Echo's error
// handler to write: [DenyJSON], the default, an *echo.HTTPError of 429
// with a JSON body (503 when its scope fails closed while the store is
// down) that errors.Is matches with [ErrLimited]; [DenyProblem] problem
// details. An exempt or skipped request is served uncounted. A store
// failure serves the request uncounted unless [Config.ErrorHandler]
// returns an error. The answers are the same, header for header, as those
// of ginlimit and echo5limit.
//
// # Proxies and balances
//
// Echo v4's RealIP takes the first X-Forwarded-For entry unless an
// IPExtractor says otherwise; the middleware never uses it, but logs and
// other middleware do. Log [CheckClientIP] at start-up: it reports W612
// while Echo and ratescope disagree on a caller's address. A JSON-RPC
// handler charges each caller's decaying balance with package balance, and
// a WebSocket is served by package wslimit.
//
// A middleware is safe for concurrent use.
package echolimit
