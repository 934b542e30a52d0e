package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a [Limiter]. Zero fields take the defaults stated on
// each; [New] applies them to a copy and never changes the Config.
type Config struct {
	// Store keeps the counts. Required: memstore for one process, the
	// Redis store when several processes serve the API.
	Store Store

	// Scopes are the known scopes with their starting values. Default:
	// [DefaultScopes], the "api" scope. Add the search-box scopes of
	// package autocomplete here when you use it.
	Scopes []Scope

	// Rates replaces starting values, keyed by SCOPE.KIND ("api.anon",
	// "api.user") with values in the form [ParseRates] reads
	// ("60/min,1000/day"). A scope or kind it does not name keeps its
	// starting values; a key that names no known scope and kind is an
	// error, so a typo cannot silently remove a limit. A [RateTable]
	// converts to it, to read the rates from text.
	Rates map[string]string

	// NumProxies is how many reverse proxies stand in front of the
	// application; see [ClientAddr]. Default: unset, which uses the peer
	// address and makes the W601 check fire. Use Proxies(0) for none.
	NumProxies ProxyCount

	// TrustedProxies are the networks of the reverse proxies in front of
	// the application. When set, X-Forwarded-For is read only from a peer
	// in them, and walked from the right skipping only their addresses;
	// see [TrustedClientAddr] for how it combines with NumProxies.
	// Default: none, X-Forwarded-For is read as NumProxies says. Its text
	// form is comma-separated CIDRs ([Networks]).
	TrustedProxies Networks

	// Shadow puts the whole limiter in shadow mode: every decision is
	// counted, observed and reported in the headers exactly as if the
	// limits were enforced, but a caller over a limit is served (the
	// Decision allows it, with Outcome OutcomeShadow and the RateLimit
	// header showing the units left: r=0 once the limit is used up, what
	// is left when the request costs more), and the refusal it would have had is logged at
	// most once per ErrorLogInterval. Use it to roll out a new limit and
	// see whom it would refuse. Default: false, the limits are enforced.
	Shadow bool

	// ShadowScopes names scopes to run in shadow mode as Shadow does, the
	// others being enforced; the same as setting [Scope.Shadow]. A name
	// that is no known scope is an error. Default: none.
	ShadowScopes []string

	// Observe, when not nil, is called once with every decision, whatever
	// its outcome (allowed, denied, failed open, exempt, shadow), before
	// the decision is acted upon: to count decisions, log refusals or feed
	// metrics (package github.com/ratescope/ratescope/prometheus). It runs
	// on the request's goroutine and must be fast and safe for concurrent
	// use. Default: nil; then the limiter neither measures durations nor
	// allocates for it.
	Observe func(ctx context.Context, e Event)

	// IPv6Bits is the length of the IPv6 prefix anonymous callers are
	// counted by, from 1 to 128. Default: 64, the usual size of one
	// allocation, so that rotating addresses within it does not reset a
	// count.
	IPv6Bits int

	// LoadRatio is the share of a limit a caller may use before decisions
	// carry the load warning, above 0 and at most 1. Default: 0.8.
	LoadRatio float64

	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset to the IETF draft fields. Default: false.
	LegacyHeaders bool

	// Now returns the current time. The limiter reads it once per
	// decision. Default: the system clock, as time.Now reads it, but
	// cheaper: a decision reads only the monotonic clock, and the wall
	// clock is read again once a second, so that a step of the wall clock
	// is followed within a second (memstore counts on the monotonic clock
	// alone).
	Now func() time.Time

	// Logger receives store errors, at most one record per
	// ErrorLogInterval with a count of those left out. Default:
	// slog.Default().
	Logger *slog.Logger

	// ErrorLogInterval is the least time between two logged store
	// errors. Default: 10s.
	ErrorLogInterval time.Duration

	// Balances are the scopes limited by a decaying balance of request
	// costs, the XRP Ledger server's model, rather than by windows
	// (WebSocket and JSON-RPC APIs); see [BalanceScope] and
	// [Limiter.Balance]. The Store must then keep balances
	// ([BalanceStore]), or [New] fails. Default: none.
	Balances []BalanceScope
}

// Validate reports every problem with c, joined: a missing store, an invalid
// scope name, rate or rate key, an out-of-range setting, an unknown shadow
// scope, an invalid trusted network. Each is a [*ConfigError] whose text
// starts with its id (ratescope.E001 to E006), so errors.As finds it.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

func (c Config) resolve() (map[string]*Scope, error) {
	var errs []error
	if c.Store == nil {
		errs = append(errs, &ConfigError{ID: IDNoStore, Err: errors.New("no Store: use memstore.New for one process or the Redis store for several")})
	}
	var bad []error
	if c.IPv6Bits != 0 && (c.IPv6Bits < 1 || c.IPv6Bits > 128) {
		bad = append(bad, fmt.Errorf("IPv6Bits %d: want 1 to 128", c.IPv6Bits))
	}
	if c.LoadRatio != 0 && (c.LoadRatio < 0 || c.LoadRatio > 1) {
		bad = append(bad, fmt.Errorf("LoadRatio %v: want above 0 and at most 1", c.LoadRatio))
	}
	if c.ErrorLogInterval < 0 {
		bad = append(bad, fmt.Errorf("ErrorLogInterval %s: must not be negative", c.ErrorLogInterval))
	}
	errs = append(errs, withID(IDOutOfRange, errors.Join(bad...))...)
	errs = append(errs, withID(IDInvalidProxies, c.TrustedProxies.validate())...)
	scopes := c.Scopes
	if scopes == nil {
		scopes = DefaultScopes()
	}
	resolved, err := resolveScopes(scopes, c.Rates)
	errs = append(errs, withID(IDInvalidRate, err)...)
	for _, name := range c.ShadowScopes {
		if s := resolved[name]; s != nil {
			s.Shadow = true
		} else {
			errs = append(errs, scopeErr("ShadowScopes: %q is no known scope; want one of %s", name, strings.Join(sortedNames(resolved), ", ")))
		}
	}
	_, err = resolveBalances(c.Balances)
	errs = append(errs, withID(IDInvalidBalance, err)...)
	if _, ok := c.Store.(BalanceStore); len(c.Balances) > 0 && c.Store != nil && !ok {
		errs = append(errs, &ConfigError{ID: IDInvalidBalance, Err: fmt.Errorf("Balances are set but the Store (%T) keeps no balances: it has no Charge method (core.BalanceStore); use memstore or redisstore", c.Store)})
	}
	return resolved, errors.Join(errs...)
}

// A Limiter decides whether each request may proceed, by scope and caller.
//
// It finds who is calling ([Limiter.Caller]), asks its [Store] to take the
// request's cost from every limit of the scope for that kind of caller, and
// returns a [Decision] that says whether to serve the request, with the
// headers to send. If the store fails, the request is allowed and not
// counted (fail open), and the error is logged and counted.
//
// A Limiter is safe for concurrent use. Build it with [New].
type Limiter struct {
	store     Store
	scopes    map[string]*scopeLimits
	proxies   ProxyCount
	trusted   Networks
	bits6     int
	now       func() time.Time
	hook      func(context.Context, Event)
	logger    *slog.Logger
	errLog    rateLog
	shadowLog rateLog
	dropLog   rateLog // refusals of dropped callers (balance.go)
	failures  atomic.Int64
	config    Config
	balances  map[string]*BalanceScope // see balance.go
	bstore    BalanceStore
}

// scopeLimits is a scope resolved once at construction: its rates and
// precomputed header values for each kind of caller.
type scopeLimits struct {
	name   string
	shadow bool // the limiter or the scope is in shadow mode
	kinds  [2]kindLimits
}

type kindLimits struct {
	store   Store // the Limiter's, or the one ForScope gave (ScopedStore)
	rates   []Rate
	minimum int64 // the smallest Limit: the largest cost a request may have
	warnAt  [MaxLimits]int64
	policy  string // the RateLimit-Policy field value
	legacy  bool
	names   [MaxLimits]string
	// parts[i] starts limit i's entry in the RateLimit value: a ", "
	// after the first, its name and ";r=".
	parts [MaxLimits]string
	// full[i] is limit i's t when its window is a whole period from
	// empty, as after every allowed request; tails[i] is ";t=" and it.
	full  [MaxLimits]int64
	tails [MaxLimits]string
}

// New returns a Limiter for cfg, or the error of [Config.Validate].
func New(cfg Config) (*Limiter, error) {
	resolved, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("ratescope: invalid config: %w", err)
	}
	if cfg.IPv6Bits == 0 {
		cfg.IPv6Bits = 64
	}
	if cfg.LoadRatio == 0 {
		cfg.LoadRatio = 0.8
	}
	if cfg.Now == nil {
		cfg.Now = newSystemClock(anchorEvery).now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ErrorLogInterval == 0 {
		cfg.ErrorLogInterval = 10 * time.Second
	}
	cfg.TrustedProxies = slices.Clone(cfg.TrustedProxies)
	l := &Limiter{
		store:     cfg.Store,
		scopes:    make(map[string]*scopeLimits, len(resolved)),
		proxies:   cfg.NumProxies,
		trusted:   cfg.TrustedProxies,
		bits6:     cfg.IPv6Bits,
		now:       cfg.Now,
		hook:      cfg.Observe,
		logger:    cfg.Logger,
		errLog:    rateLog{every: cfg.ErrorLogInterval},
		shadowLog: rateLog{every: cfg.ErrorLogInterval},
		dropLog:   rateLog{every: cfg.ErrorLogInterval},
	}
	for name, s := range resolved {
		sl := &scopeLimits{name: name, shadow: cfg.Shadow || s.Shadow}
		for k, rates := range [2][]Rate{s.Anon, s.User} {
			sl.kinds[k] = newKindLimits(name, Kind(k), rates, cfg.LoadRatio, cfg.LegacyHeaders)
			sl.kinds[k].store = cfg.Store
			if ss, ok := cfg.Store.(ScopedStore); ok {
				sl.kinds[k].store = ss.ForScope(name, Kind(k), rates)
			}
		}
		l.scopes[name] = sl
	}
	cfg.Scopes = make([]Scope, 0, len(resolved))
	for _, name := range sortedNames(resolved) {
		cfg.Scopes = append(cfg.Scopes, *resolved[name])
	}
	balances, _ := resolveBalances(cfg.Balances)
	if err := l.initBalances(&cfg, balances); err != nil {
		return nil, err
	}
	l.config = cfg
	return l, nil
}

func newKindLimits(scope string, kind Kind, rates []Rate, ratio float64, legacy bool) kindLimits {
	kl := kindLimits{rates: rates, minimum: MaxLimit, legacy: legacy}
	for i, r := range rates {
		kl.minimum = min(kl.minimum, r.Limit)
		kl.warnAt[i] = r.Limit - int64(ratio*float64(r.Limit))
		kl.names[i] = policyName(scope, kind, r)
		kl.parts[i] = kl.names[i] + ";r="
		kl.full[i] = ceilSeconds(r.Period)
		kl.tails[i] = ";t=" + strconv.FormatInt(kl.full[i], 10)
		if i > 0 {
			kl.policy += ", "
			kl.parts[i] = ", " + kl.parts[i]
		}
		kl.policy += kl.names[i] + ";q=" + strconv.FormatInt(r.Limit, 10) + ";w=" + strconv.FormatInt(int64(r.Period/time.Second), 10)
	}
	return kl
}

// Config returns the configuration in force: defaults applied and, in
// Scopes, every known scope with the rates it enforces, sorted by name.
// The result is a copy: changing it changes nothing in the Limiter.
func (l *Limiter) Config() Config {
	c := l.config
	c.Scopes = make([]Scope, len(l.config.Scopes))
	for i, s := range l.config.Scopes {
		c.Scopes[i] = s.clone()
	}
	c.Rates = maps.Clone(l.config.Rates)
	c.Balances = slices.Clone(l.config.Balances)
	c.ShadowScopes = slices.Clone(l.config.ShadowScopes)
	c.TrustedProxies = slices.Clone(l.config.TrustedProxies)
	return c
}

// HasScope reports whether name is a known scope.
func (l *Limiter) HasScope(name string) bool {
	return l.scopes[name] != nil
}

// CheckCost returns an error unless requests of the given cost can be
// decided in scope: a known scope and a cost of at least 1. Adapters call
// it when a route is set up, so that no request fails later.
//
// A cost above the smallest limit of a kind of caller is not an error: it
// is clamped to that limit when the request is decided (see
// [Limiter.AllowN]), so that lowering a rate never stops the application
// from starting. [Limiter.Guard] logs a warning for it.
func (l *Limiter) CheckCost(scope string, cost int64) error {
	s := l.scopes[scope]
	if s == nil {
		return fmt.Errorf("ratescope: unknown scope %q: the limiter's scopes are %s; name one of them, or add a core.Scope named %q to core.Config.Scopes", scope, strings.Join(slices.Sorted(maps.Keys(l.scopes)), ", "), scope)
	}
	if cost < 1 {
		return fmt.Errorf("ratescope: cost %d for scope %q: want 1 or more (the units one request uses)", cost, scope)
	}
	return nil
}

// clampCost returns cost, or the smallest limit of k if cost is above it:
// the clamping rule of [Limiter.AllowN].
func (k *kindLimits) clampCost(cost int64) int64 {
	return min(cost, k.minimum)
}

// Caller returns who made r: the signed-in user if user is not empty,
// otherwise an anonymous caller counted by the network of its address
// ([TrustedClientAddr] with the configured number of proxies and trusted
// networks, then the IPv6 prefix). A user id that starts with a NUL byte
// gets another in front, so that no user id is ever a [KeyCaller].
func (l *Limiter) Caller(r *http.Request, user string) Caller {
	if user != "" {
		if user[0] == 0 {
			// Keep the id apart from every KeyCaller.
			user = "\x00" + user
		}
		return Caller{User: user}
	}
	var forwarded []string
	if l.proxies.n > 0 || len(l.trusted) > 0 {
		forwarded = r.Header["X-Forwarded-For"]
	}
	a := TrustedClientAddr(r.RemoteAddr, forwarded, l.proxies, l.trusted)
	return Caller{Network: network(a, l.bits6)}
}

// Allow is shorthand for AllowN(ctx, scope, caller, 1).
func (l *Limiter) Allow(ctx context.Context, scope string, caller Caller) (Decision, error) {
	return l.AllowN(ctx, scope, caller, 1)
}

// AllowN decides a request of the given cost by caller in scope, and if it
// is allowed, counts it against every limit of the scope for the caller's
// kind, all or nothing.
//
// A cost above the smallest limit of the caller's kind is clamped to that
// limit: such a request is allowed only when the caller has used nothing of
// that limit's window, and Decision.Cost is the clamped cost. (Refusing it
// would make the route unusable after a rate was lowered below its cost.)
//
// The error is not nil only for a mistake of the program: an unknown scope
// or a cost below 1 ([Limiter.CheckCost]); the Decision then denies, with
// OutcomeNone, and is not observed. A store failure is not returned: the
// Decision allows the request, with Checked false and StoreErr set.
func (l *Limiter) AllowN(ctx context.Context, scope string, caller Caller, cost int64) (Decision, error) {
	var d Decision
	s := l.scopes[scope]
	if s == nil || cost < 1 {
		d.Scope, d.Caller, d.Cost = scope, caller, cost
		return d, l.CheckCost(scope, cost)
	}
	start := l.start()
	l.decide(ctx, s, caller, s.kinds[caller.Kind()].clampCost(cost), &d)
	l.observe(ctx, &d, start)
	return d, nil
}

// storeFailed counts and logs, at a limited rate, a store error on a
// decision in scope at now: the request is allowed without counting.
//
// A caller that hung up (its context ended, and the store's error is that
// context's) is no failure of the store: neither logged nor counted.
func (l *Limiter) storeFailed(ctx context.Context, now time.Time, scope string, err error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return
	}
	l.failures.Add(1)
	if quiet, ok := l.errLog.allow(now); ok {
		l.logger.LogAttrs(ctx, slog.LevelError, "ratescope: store failed; request allowed without counting (fail open)",
			slog.String("scope", scope), slog.String("error", err.Error()), slog.Int64("suppressed", quiet))
	}
}

// decide fills d with the decision on a request whose cost fits the scope.
func (l *Limiter) decide(ctx context.Context, s *scopeLimits, caller Caller, cost int64, d *Decision) {
	k := &s.kinds[caller.Kind()]
	d.Scope, d.Caller, d.Cost, d.limits = s.name, caller, cost, k
	now := l.now()
	// The result goes straight into d: it is the largest part of a
	// decision, and copied once.
	var err error
	d.res, err = k.store.Take(ctx, Request{Scope: s.name, Caller: caller, Limits: k.rates, Cost: cost, Now: now})
	res := &d.res
	if err != nil {
		*res = Result{}
		l.storeFailed(ctx, now, s.name, err)
		d.Allowed = true
		d.Outcome = OutcomeFailedOpen
		d.StoreErr = err
		return
	}
	d.Allowed, d.Checked = res.Allowed, true
	d.Outcome = OutcomeAllowed
	if !res.Allowed {
		d.Outcome = OutcomeDenied
	}
	d.n = len(k.rates)
	for i := range d.n {
		st := &res.Limits[i]
		d.RetryAfter = max(d.RetryAfter, st.RetryAfter)
		if st.Remaining < k.warnAt[i] {
			d.Load = true
		}
	}
	if !res.Allowed && s.shadow {
		d.Allowed, d.Outcome = true, OutcomeShadow
		l.logShadow(ctx, now, d)
	}
}

// logShadow logs, at most once per ErrorLogInterval, a refusal that shadow
// mode let through.
func (l *Limiter) logShadow(ctx context.Context, now time.Time, d *Decision) {
	quiet, ok := l.shadowLog.allow(now)
	if !ok {
		return
	}
	st, _ := d.Refusing()
	l.logger.LogAttrs(ctx, slog.LevelWarn, "ratescope: shadow mode served a request over the limit",
		slog.String("scope", d.Scope), slog.String("kind", d.Caller.Kind().String()), slog.String("caller", d.Caller.String()),
		slog.String("limit", st.Rate.String()), slog.Int64("cost", d.Cost), slog.Int64("suppressed", quiet))
}

// A Guard decides the requests of one scope, each at its route's cost:
// what a middleware does for every request, in the same way for every
// framework. Build it once per middleware with [Limiter.Guard], and give it
// routes' costs with [Guard.WithRouteCosts]; it is safe for concurrent use.
type Guard struct {
	lim   *Limiter
	scope *scopeLimits
	cost  [2]int64            // by Kind, clamped
	costs map[string][2]int64 // by route pattern, clamped
}

// DefaultScope is the scope a [Limiter.Guard] built with an empty scope
// name decides in.
const DefaultScope = "api"

// Guard returns a Guard for requests of the given cost in scope, or the
// error of [Limiter.CheckCost], so that a route set up with a bad scope or
// cost fails at startup rather than on a request. An empty scope is
// [DefaultScope]; a cost of 0 is 1. A cost above the smallest limit of a
// kind of caller is clamped to it, as [Limiter.AllowN] says, and logged as
// a warning.
func (l *Limiter) Guard(scope string, cost int64) (*Guard, error) {
	if scope == "" {
		scope = DefaultScope
	}
	if cost == 0 {
		cost = 1
	}
	if err := l.CheckCost(scope, cost); err != nil {
		return nil, err
	}
	g := &Guard{lim: l, scope: l.scopes[scope]}
	g.cost = g.clamped("", cost)
	return g, nil
}

// clamped returns cost for each kind of caller, clamped, and logs a
// warning for each kind it had to clamp.
func (g *Guard) clamped(route string, cost int64) [2]int64 {
	var out [2]int64
	for k := range g.scope.kinds {
		kl := &g.scope.kinds[k]
		out[k] = kl.clampCost(cost)
		if out[k] != cost {
			g.lim.logger.Warn("ratescope: cost above the smallest limit; clamped to it, so such a request is allowed only when the caller has used nothing of that limit",
				"scope", g.scope.name, "kind", Kind(k).String(), "route", route, "cost", cost, "clamped", out[k])
		}
	}
	return out
}

// WithRouteCosts returns a copy of g that decides a request to one of the
// routes of costs (keyed by route pattern, as the framework names it:
// Gin's FullPath, Echo's Path) at that route's cost, and any other request
// at g's cost, in one decision: a group middleware limits every route of
// the group, each at its own cost, and a request is counted once. A cost
// below 1 is an error; one above a limit is clamped, as for [Limiter.Guard].
func (g *Guard) WithRouteCosts(costs map[string]int64) (*Guard, error) {
	c := *g
	c.costs = make(map[string][2]int64, len(costs))
	var errs []error
	for _, route := range slices.Sorted(maps.Keys(costs)) {
		cost := costs[route]
		if cost < 1 {
			errs = append(errs, fmt.Errorf("ratescope: cost %d of route %q: want 1 or more; leave the route out of Costs for the middleware's own cost", cost, route))
			continue
		}
		c.costs[route] = c.clamped(route, cost)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &c, nil
}

// Cost returns the cost a request by a caller of kind k to route is
// decided at: the route's cost if [Guard.WithRouteCosts] gave one, the
// guard's otherwise, clamped.
func (g *Guard) Cost(route string, k Kind) int64 {
	if g.costs != nil {
		if c, ok := g.costs[route]; ok {
			return c[k]
		}
	}
	return g.cost[k]
}

// Caller is [Limiter.Caller]: who made r, user being the signed-in user's
// id or "" for an anonymous caller.
func (g *Guard) Caller(r *http.Request, user string) Caller {
	return g.lim.Caller(r, user)
}

// Decide is DecideRoute(ctx, caller, "", h): the request at the guard's
// own cost.
func (g *Guard) Decide(ctx context.Context, caller Caller, h http.Header) *Decision {
	return g.DecideRoute(ctx, caller, "", h)
}

// DecideRoute decides a request by caller to route (its pattern, or "")
// at [Guard.Cost], counting it if allowed, and writes the decision's
// headers to h ([Decision.SetHeaders]). The caller answers 429 when the
// decision does not allow the request. A store failure allows the request,
// as for [Limiter.AllowN]. The decision is observed (Config.Observe).
func (g *Guard) DecideRoute(ctx context.Context, caller Caller, route string, h http.Header) *Decision {
	d := new(Decision)
	g.DecideInto(ctx, d, caller, route, h)
	return d
}

// DecideInto is DecideRoute writing the decision into d, which it first
// clears, instead of into a new Decision: an adapter keeps d in its own
// variable, so that a request whose decision nobody keeps costs no
// allocation for it. DecideInto keeps no reference to d: the observation
// hook (Config.Observe) gets a copy.
func (g *Guard) DecideInto(ctx context.Context, d *Decision, caller Caller, route string, h http.Header) {
	start := g.lim.start()
	*d = Decision{}
	g.lim.decide(ctx, g.scope, caller, g.Cost(route, caller.Kind()), d)
	d.SetHeaders(h)
	g.lim.observe(ctx, d, start)
}

// Exempt is ExemptInto on a new Decision, for a request at the guard's
// own cost.
func (g *Guard) Exempt(ctx context.Context, caller Caller) *Decision {
	d := new(Decision)
	g.ExemptInto(ctx, d, caller, "")
	return d
}

// ExemptInto writes into d the decision for a request to route (its
// pattern, or "") by a caller exempt from the limits (an administrator):
// allowed, not counted, with Outcome OutcomeExempt, the route's cost
// ([Guard.Cost]) and no headers to write. The decision is observed
// (Config.Observe), so that exempt requests are seen too. As
// [Guard.DecideInto], it keeps no reference to d.
func (g *Guard) ExemptInto(ctx context.Context, d *Decision, caller Caller, route string) {
	*d = Decision{Allowed: true, Outcome: OutcomeExempt, Scope: g.scope.name, Caller: caller, Cost: g.Cost(route, caller.Kind())}
	g.lim.observe(ctx, d, time.Time{})
}

// StoreFailures returns how many decisions failed open because the store
// returned an error, since the Limiter was built. An error caused by the end
// of the request's context (a client that hung up) is not counted.
func (l *Limiter) StoreFailures() int64 {
	return l.failures.Load()
}

// rateLog lets through at most one log record per interval, and counts
// those left out since the last one, so that a dead store or a shadow
// scope over its limit does not flood the log. Leaving a record out takes
// two atomic operations and no lock, as it happens on every request of a
// caller over its limit in shadow mode.
type rateLog struct {
	every time.Duration
	mu    sync.Mutex   // held to let a record through
	next  atomic.Int64 // Unix nanoseconds before which records are left out
	quiet atomic.Int64
}

// allow reports whether to log a record at now and, if so, how many were
// left out since the last.
func (e *rateLog) allow(now time.Time) (suppressed int64, ok bool) {
	t := now.UnixNano()
	if t < e.next.Load() {
		e.quiet.Add(1)
		return 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t < e.next.Load() {
		e.quiet.Add(1)
		return 0, false
	}
	e.next.Store(t + int64(e.every))
	return e.quiet.Swap(0), true
}
