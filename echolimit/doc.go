// Package echolimit is the rate-limiting middleware for Echo v4
// (github.com/labstack/echo/v4): it puts a [core.Limiter]'s limits in
// front of Echo routes; echo5limit is the same for Echo v5. The core
// decides who the caller is, whether the request is allowed and what
// headers to write (see [core] for the model); this package reads the
// caller from the Echo context and answers as the decision says.
//
// [New] builds the middleware from a [Config], checked once, so that a
// wrong setting fails at start-up. [Config.User] returns the signed-in
// user your session or token middleware found, [Config.Key] an API key to
// count by; a request with neither is counted by address. One middleware on a group decides each request once, at the
// cost [Config.RouteCosts] gives its route. A refused request returns the
// error of [Config.DenyHandler] for Echo's error handler: [DenyJSON]'s
// *echo.HTTPError (429, or 503 when its scope fails closed), which
// errors.Is matches with [ErrLimited], or [DenyProblem]'s answer.
//
// Echo v4's RealIP believes X-Forwarded-For unless an IPExtractor says
// otherwise; the middleware never uses it, but logs do. Log
// [CheckClientIP] at start-up.
//
// A store failure serves the request uncounted unless [Config.ErrorHandler]
// returns an error. A JSON-RPC route charges a decaying balance with package
// balance, and a WebSocket is served by package wslimit.
//
// A middleware is safe for concurrent use.
package echolimit
