// Package balance limits a WebSocket or JSON-RPC API as the XRP Ledger
// server (rippled) limits its public APIs: by a decaying balance of
// request costs, instead of the windows of package core.
//
// # The model
//
// Every request adds its cost ([CostReference], 20, for an ordinary one,
// up to [CostHeavy], 3000, for a path search) to the caller's sum, which
// loses 1/32 of itself each second; the balance is the sum over 32, so
// that a steady cost of R per second settles near a balance of R. At the warning threshold the caller
// is told "load", at most once a second ([Decision.Load]:
// "Ratescope-Warning: load" and "warning":"load" in the reply,
// [WarnJSON]); at the drop threshold it is refused, and each refusal
// costs more, so that a caller who keeps trying stays out until it slows
// down, while one who retries once a second gets back in. The drop is
// logged once, when the caller becomes dropped (rippled logs every
// refusal). [Policy] gives the exact arithmetic, and docs/adr/0002 the
// choices.
//
// # Use
//
// Build one [Guard] per balance scope with [New], from the application's
// [core.Limiter] (for its clock, logger, allowlists, header policy and
// Observe hook) and a [Store] (memstore or redisstore). Then, for each
// request or message, find the caller as for the window limits and call
// [Guard.Charge]:
//
//	d := guard.Charge(ctx, lim.Caller(r, core.UserCaller(user)), cost)
//	d.SetHeaders(w.Header())
//	if !d.Allowed {
//		balance.WriteOverloaded(w) // 503 "Server is overloaded"
//		return
//	}
//	// ... reply with WarnJSON(d.Load, result) ...
//
// The same lines work in a Gin or Echo handler, on its response writer.
// Package wslimit does it for a WebSocket API, closing a dropped caller's
// connection with code 1008, "threshold exceeded". An administrator is
// decided with [Guard.Exempt]; an operator clears a balance with
// [Guard.Reset].
//
// A store failure allows the request uncharged (fail open), logged and
// counted by the limiter, unless Config.FailMode is core.FailClosed: it is then refused,
// with Retry-After. The limiter's Config.Observe sees every decision as a
// [core.Event], so that package liveview and the metrics modules count
// balance scopes beside window scopes.
package balance
