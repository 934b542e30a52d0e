// Package ginlimit is the rate-limiting middleware for Gin: use it to put a
// [core.Limiter]'s limits in front of Gin routes. The core decides who the
// caller is, whether the request is allowed and what headers to write (see
// [core] for the model); this package reads the caller from the Gin context
// and answers as the decision says.
//
// # Use
//
// [New] builds the middleware from a [Config], checked once, so that a
// wrong setting fails at start-up rather than on a request. Set
// [Config.User] to the signed-in user your session or token middleware
// found, or [Config.Key] to count by API key; a request with neither is
// counted by address. Put one middleware on a group and give routes their
// own cost with [Config.RouteCosts], keyed by c.FullPath(): each request is
// decided once. [Config.Plan] chooses a signed-in caller's plan,
// [Config.GiveBack] counts only the requests that fail (a sign-in form),
// and [Config.KeepDecision] keeps the decision for handlers ([Decision]).
//
// # Answers
//
// An allowed request gets the rate-limit fields and runs the next handler.
// A refused one is answered by [Config.DenyHandler] and aborts: [DenyJSON],
// the default, writes 429 with a JSON body (503 when its scope fails
// closed while the store is down), [DenyProblem] problem details. An
// exempt or skipped request is served uncounted. A store failure serves
// the request uncounted unless [Config.ErrorHandler] aborts it. The answers
// are the same, header for header, as those of echolimit and echo5limit.
//
// # Proxies and balances
//
// Gin trusts every proxy unless told otherwise; give r.SetTrustedProxies
// the same networks as the limiter, and log [CheckClientIP] at start-up: it
// reports W612 while Gin and ratescope disagree on a caller's address.
// A JSON-RPC route charges each caller's decaying balance with package
// balance, and a WebSocket is served by package wslimit.
//
// A middleware is safe for concurrent use.
package ginlimit
