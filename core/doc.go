// Package core decides whether a caller of a web API may make one more
// request, and what to tell it. It imports only the standard library: the
// middleware packages (ginlimit, echolimit, echo5limit, httplimit) read the caller
// from their framework and answer as the [Decision] says, and the stores
// (core/memstore, core/redisstore) keep the counts.
//
// # Model
//
// A [Scope] is a named group of limits, such as "api" or
// "autocomplete.project". For each [Kind] of caller it has a list of
// [Rate] values that all apply: normally one over a minute, which stops a
// burst, and one over a day, which stops steady heavy use. Every scope has
// starting values; [Config.Rates], keyed "SCOPE.KIND" ("api.anon",
// "api.user"), replaces them kind by kind, and a key that names no scope or
// kind fails [New], so that a typo cannot remove a limit.
//
// A [Caller] is a signed-in user, counted by id whatever address it uses;
// an API key, counted with the user limits but apart from every user; or
// anonymous, counted by network address, an IPv6 caller by its /64.
//
// A request has a cost, 1 unless said otherwise, taken from every limit of
// its scope and kind at once, all or nothing; a refused request takes
// nothing, so a caller recovers as soon as it slows down. Each limit is a
// sliding window of 20 buckets: in any interval of its period at most its
// number of units are allowed, at any boundary, and a caller that paces
// itself at up to 95% of a rate is never refused. A refusal's
// [Decision.RetryAfter] is honest (waiting that long is enough) and never
// more than the refusing limit's period. Package balance adds a second
// kind of limit for WebSocket and JSON-RPC APIs: the XRP Ledger server's
// decaying sum of request costs, with a load warning before a drop.
//
// # Callers behind proxies
//
// Behind reverse proxies the caller's address is read from X-Forwarded-For,
// counted from the right: [Config.NumProxies] says how many proxies wrote
// the right-hand entries, [Config.TrustedProxies] which networks they are
// in, so a caller cannot choose the address it is counted by. Until either
// is set the peer address is used and the check W601 warns; 0 proxies is a
// valid answer. An address that cannot be read as configured is counted as
// the proxy's and is never exempt by network. The rules in full are in
// docs/identity.md in the repository.
//
// # Stores
//
// Use core/memstore for one process and core/redisstore when several
// processes serve the API. Both count with the same arithmetic and pass
// one conformance suite (core/storetest). If the store fails, the request
// is allowed and not counted, refused, or decided in the process's memory,
// as its scope's [FailMode] says; a store that answers late ([ErrLate])
// has its requests decided in memory unless the scope fails closed.
//
// # Headers and production
//
// A decision writes the RateLimit-Policy and RateLimit fields of the IETF
// draft, Retry-After on a refusal, and "Ratescope-Warning: load" once the
// caller has used most of a limit; [Config.Headers] says which responses
// carry them. [Config.Observe] sees every decision with its [Outcome], for
// logs and metrics. [Scope.Shadow] counts and reports a new limit without
// refusing anybody. [Config.ExemptNetworks] and [Config.ExemptUsers] exempt
// callers from every limit, and [Limiter.Reset] unblocks one. [RateTable],
// [Networks], [HeaderMode], [FailMode] and [Rate] have one text form each
// (encoding.TextUnmarshaler), read from flags with flag.TextVar and from
// environment variables, JSON and YAML strings. The limiter reads its clock ([Config.Now]) once per decision,
// so tests use a fake clock and never sleep.
package core
