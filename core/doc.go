// Package core is the framework-free heart of ratescope: it decides whether
// a caller of a web API may make one more request, and what to tell it.
//
// The adapters for Gin (package ginlimit) and Echo (packages echolimit and
// echo5limit) only find the signed-in user in their framework's context,
// run the one request pipeline of this package ([Guard.Check] into a
// [Ticket]), and answer what the [Decision] says in their framework's way.
// Everything that must be the same for every framework lives here: who the
// caller is, exemptions and plans, the counting, the headers, the body of a
// refusal and giving a request back.
//
// # Model
//
// A [Scope] is a named group of limits, such as "api" or
// "autocomplete.project". Each scope has, for each [Kind] of caller, a list
// of [Rate] values that all apply: normally one over a minute, which stops a
// burst, and one over a day, which stops steady heavy use. Signed-in callers
// ([User]) normally get several times the anonymous allowance.
//
// Every scope comes with starting values; [Config.Rates], a dictionary keyed
// "SCOPE.KIND" ("api.anon", "api.user"), replaces them kind by kind. A scope
// it does not name keeps its starting values, and a key that names no known
// scope or kind is an error when the Limiter is built, so that a typo cannot
// silently remove a limit.
//
// A [Caller] ([UserCaller], [KeyCaller], [Limiter.AddrCaller], or found by
// [Limiter.Caller]) is counted by person when signed in, whatever address it uses,
// and by network address when anonymous. The limits of one kind never apply
// to the other, and no two callers share a count, whatever characters a user
// id holds. Behind reverse proxies the address comes from X-Forwarded-For,
// at the position that [Config.NumProxies] says the caller cannot write (see
// "Callers behind proxies" below); IPv6 callers are counted by their /64.
//
// A request has a cost, 1 unless said otherwise, so that expensive requests
// can count for more. [Limiter.AllowN] checks and takes the cost from all the
// limits of the scope at once, all or nothing: a refused request takes
// nothing, so a caller recovers as soon as it slows down.
//
// # Callers behind proxies
//
// Each proxy appends to X-Forwarded-For the address it received the request
// from, so the right-hand end of the list is written by the proxies and the
// rest by whoever sent the request, who can write anything. With n proxies
// ([Config.NumProxies]), the n-th entry from the right was written by the
// outermost proxy about the address it received the request from: the
// caller. It is the only entry about the caller that the caller cannot
// choose; entries to its left are ignored, so a caller cannot move its
// count by sending its own X-Forwarded-For. Several header lines are read
// as one list, in order. With no proxies set, or 0, the peer address is
// the caller's and the header is ignored. With fewer entries than proxies,
// or an entry that is not an IP address, the request did not come through
// the proxies as configured and the peer address is used: such callers are
// counted as the proxy, never as somebody new, and never exempt by
// [Config.ExemptNetworks], which often hold the proxies' own addresses.
//
// With [Config.TrustedProxies], X-Forwarded-For is read only when the peer
// is in one of the networks: a caller that reaches the application
// directly cannot choose its address, whatever it writes in the header.
// The entries are then walked from the right, skipping those in the
// networks (the proxies' own addresses): the first entry outside them is
// the caller. With NumProxies also set, the walk stops at the n-th entry at
// the latest, so of the two the setting that trusts fewer entries wins;
// NumProxies set to 0 reads no header at all (the W611 check reports that
// the networks are then unused). [Limiter.Caller] returns whom a request
// is counted against.
//
// # The guarantee
//
// Each limit is a sliding window of its period P, cut into 20 buckets of
// P/20 aligned on the Unix epoch, plus the current bucket: 21 counters. A
// request at time t is allowed if the units in every bucket that overlaps
// (t-P, t], plus its cost, are within the limit. Because those buckets cover
// the whole interval, the guarantee is exact:
//
//	in any interval of length P, at most Limit units are allowed,
//
// at any boundary, unlike fixed windows, GCRA or token buckets, which let
// through up to twice the limit around a boundary. Memory is 21 counters of
// 2 bytes (4 for a limit above 65,535) and a 2-byte time per limit, and one
// timestamp per caller, whatever the traffic; no request is logged.
//
// The caller's timestamp is that of its last admitted request, so every
// count has left the window one period after it: no wait is ever longer
// than the period, and a caller that spent its whole limit at once waits
// exactly P, as with a log of every request. The price of the buckets is
// caution for counts spread over time: an older bucket stays counted until
// its end has left the window, so such a caller may wait up to a bucket
// (P/20) longer than a log would make it. A client that paces itself evenly
// at up to 20/21 (95%) of a rate is never refused (docs/adr/0001).
//
// When a request is refused, [Decision.RetryAfter] is the exact time until
// it would be allowed if the caller sent nothing meanwhile, never more than
// the period of the limit that refused it, and the Retry-After header
// rounds it up to whole seconds: waiting that long is always enough, never
// more than a second too much.
//
// # Plans
//
// A scope may give the signed-in callers on a plan (an account's tier)
// rates of their own: [Scope.Plans], or the rate key SCOPE.user@PLAN
// ("api.user@gold=600/min,100000/day"). The plan is chosen per request,
// with [Call.Plan] (the middlewares' Config.Plan), and counted on the
// caller's one count whatever the plan, so a plan has the periods of the
// scope's user rates and a caller changing plan keeps what it used. An
// unknown plan gets the scope's user rates and a warning; [Limiter.Plans]
// lists the known ones. See docs/adr/0104-plans.md.
//
// # Balances
//
// A second kind of limit suits WebSocket and JSON-RPC APIs: package
// balance limits each caller by a decaying balance of request costs, the
// XRP Ledger server's model, beside the Limiter, whose callers, clock,
// allowlists and Observe hook it shares.
//
// # Counting failures only
//
// A sign-in form should count the attempts that fail, not those that
// succeed. Every request is counted first, as any other, and once its
// response shows a success, [Limiter.GiveBack] returns its units: so an
// attempt in flight holds its units, and no number of concurrent attempts
// gets past the limit (peeking before and counting after would let them
// all through). The adapters do it with their Config.GiveBack; the store
// must be a [GiveBackStore]; see docs/adr/0101.
//
// # Stores
//
// The counts live in a [Store]: memstore keeps them in the memory of one
// process, redisstore in Redis, shared by every process that serves the API.
// Both count with the same arithmetic and pass one conformance suite
// (package storetest). If the store fails, the request is allowed and not
// counted (fail open): a store that is down turns the limits off rather
// than the API. The failure is logged, at most once per
// Config.ErrorLogInterval, and counted ([Limiter.StoreFailures]), unless
// the request's context ended first: a client that hangs up is not a store
// failure.
//
// # Headers
//
// [Decision.SetHeaders] writes the RateLimit-Policy and RateLimit fields of
// the IETF draft draft-ietf-httpapi-ratelimit-headers, Retry-After when the
// request is refused and, on request, the legacy X-RateLimit-* fields. A
// decision also carries a load warning ([Decision.Load]) when the caller has
// used most of a limit, before it is cut off; SetHeaders then writes
// "Ratescope-Warning: load" ([HeaderWarning]).
//
// [Config.Headers] ([HeaderMode]) says which responses carry these fields:
// every response ([HeadersAll], the default), refusals only
// ([HeadersRefused]) or none ([HeadersNone]); a refusal carries
// Retry-After whatever it says. A served request under the last two costs
// no allocation and no formatting.
//
// # Running in production
//
// [Config.Observe] sees every decision with its [Outcome] (allowed,
// denied, failed open, exempt, shadow, failed closed), for logs and
// metrics (modules github.com/ratescope/ratescope/prometheus and
// github.com/ratescope/ratescope/otel); unset, it costs nothing.
// [Config.Shadow], [Config.ShadowScopes] and [Scope.Shadow] run limits in
// shadow mode: counted and reported as if enforced, but nobody is refused.
// [Config.TrustedProxies] reads X-Forwarded-For only from the proxies'
// networks. [GuardConfig.RouteCosts] gives the routes
// of one middleware their own costs, each request decided once; a cost
// above the smallest limit is clamped to it ([Limiter.AllowN]).
// [RateTable], [ProxyCount], [Rate] and [Networks] load from flags,
// environment, JSON and YAML. [KeyCaller] counts callers by API key. Every
// problem [New] rejects is a [ConfigError] whose text starts with its id.
//
// # Allowlists and failing closed
//
// [Config.ExemptNetworks] and [Config.ExemptUsers] exempt callers from
// every limit, window and balance scopes alike, with no code in the
// adapters: a network exempts everybody whose request comes from it, as
// [Limiter.Caller] finds the address. [Config.FailClosedScopes] and
// [Scope.FailClosed] (a balance scope's Config.FailClosed) make a scope refuse
// while the store fails ([OutcomeFailedClosed]; [Decision.Status] is 503,
// with Retry-After from the store's [RetryAfterError]) instead of serving
// uncounted. For browsers, [ExposedHeaders] names the headers to expose
// through CORS, and [Decision.Problem] gives a refusal as RFC 9457 problem
// details.
//
// # Time
//
// The Limiter reads its clock ([Config.Now]) once per decision and passes
// the time to the store, so that tests use a fake clock and never sleep.
package core
