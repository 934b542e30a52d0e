// Package ginlimit is the rate-limiting middleware for Gin: it puts a
// [core.Limiter]'s limits in front of Gin routes. The core decides who the
// caller is, whether the request is allowed and what headers to write (see
// [core] for the model); this package reads the caller from the Gin context
// and answers as the decision says.
//
// [New] builds the middleware from a [Config], checked once, so that a
// wrong setting fails at start-up. [Config.User] returns the signed-in
// user your session or token middleware found, [Config.Key] an API key to
// count by; a request with neither is counted by address. One middleware on a group decides each request once, at the
// cost [Config.RouteCosts] gives its route. A refused request is answered
// by [Config.DenyHandler] and aborts: [DenyJSON] (429, or 503 when its
// scope fails closed) or [DenyProblem]. The answers are the same, header
// for header, as those of echolimit and echo5limit.
//
// Gin trusts every proxy unless told otherwise: give r.SetTrustedProxies
// the same networks as the limiter, and log [CheckClientIP] at start-up.
//
// A store failure serves the request uncounted unless [Config.ErrorHandler]
// aborts it. A JSON-RPC route charges a decaying balance with package
// balance, and a WebSocket is served by package wslimit.
//
// A middleware is safe for concurrent use.
package ginlimit
