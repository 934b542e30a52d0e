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
	// error, so a typo cannot silently remove a limit.
	Rates map[string]string

	// NumProxies is how many reverse proxies stand in front of the
	// application; see [ClientAddr]. Default: unset, which uses the peer
	// address and makes the W601 check fire. Use Proxies(0) for none.
	NumProxies ProxyCount

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

	// Now returns the current time. Default: time.Now. The limiter reads
	// it once per decision.
	Now func() time.Time

	// Logger receives store errors, at most one record per
	// ErrorLogInterval with a count of those left out. Default:
	// slog.Default().
	Logger *slog.Logger

	// ErrorLogInterval is the least time between two logged store
	// errors. Default: 10s.
	ErrorLogInterval time.Duration
}

// Validate reports every problem with c, joined: a missing store, an invalid
// scope name, rate or rate key, an out-of-range setting.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

func (c Config) resolve() (map[string]*Scope, error) {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("no Store: use memstore.New for one process or the Redis store for several"))
	}
	if c.IPv6Bits != 0 && (c.IPv6Bits < 1 || c.IPv6Bits > 128) {
		errs = append(errs, fmt.Errorf("IPv6Bits %d: want 1 to 128", c.IPv6Bits))
	}
	if c.LoadRatio != 0 && (c.LoadRatio < 0 || c.LoadRatio > 1) {
		errs = append(errs, fmt.Errorf("LoadRatio %v: want above 0 and at most 1", c.LoadRatio))
	}
	if c.ErrorLogInterval < 0 {
		errs = append(errs, fmt.Errorf("ErrorLogInterval %s: must not be negative", c.ErrorLogInterval))
	}
	scopes := c.Scopes
	if scopes == nil {
		scopes = DefaultScopes()
	}
	resolved, err := resolveScopes(scopes, c.Rates)
	errs = append(errs, err)
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
	store    Store
	scopes   map[string]*scopeLimits
	proxies  ProxyCount
	bits6    int
	now      func() time.Time
	logger   *slog.Logger
	errLog   errorLog
	failures atomic.Int64
	config   Config
}

// scopeLimits is a scope resolved once at construction: its rates and
// precomputed header values for each kind of caller.
type scopeLimits struct {
	name  string
	kinds [2]kindLimits
}

type kindLimits struct {
	rates   []Rate
	minimum int64 // the smallest Limit: the largest cost a request may have
	warnAt  [MaxLimits]int64
	policy  string // the RateLimit-Policy field value
	legacy  bool
	names   [MaxLimits]string
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
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ErrorLogInterval == 0 {
		cfg.ErrorLogInterval = 10 * time.Second
	}
	l := &Limiter{
		store:   cfg.Store,
		scopes:  make(map[string]*scopeLimits, len(resolved)),
		proxies: cfg.NumProxies,
		bits6:   cfg.IPv6Bits,
		now:     cfg.Now,
		logger:  cfg.Logger,
		errLog:  errorLog{every: cfg.ErrorLogInterval},
	}
	for name, s := range resolved {
		sl := &scopeLimits{name: name}
		for k, rates := range [2][]Rate{s.Anon, s.User} {
			sl.kinds[k] = newKindLimits(name, Kind(k), rates, cfg.LoadRatio, cfg.LegacyHeaders)
		}
		l.scopes[name] = sl
	}
	cfg.Scopes = make([]Scope, 0, len(resolved))
	for _, name := range sortedNames(resolved) {
		cfg.Scopes = append(cfg.Scopes, *resolved[name])
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
		if i > 0 {
			kl.policy += ", "
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
		c.Scopes[i] = Scope{Name: s.Name, Anon: slices.Clone(s.Anon), User: slices.Clone(s.User)}
	}
	c.Rates = maps.Clone(l.config.Rates)
	return c
}

// HasScope reports whether name is a known scope.
func (l *Limiter) HasScope(name string) bool {
	return l.scopes[name] != nil
}

// CheckCost returns an error unless every request of the given cost can fit
// the limits of the scope for both kinds of caller: a known scope, and a
// cost from 1 to the smallest limit. Adapters call it when a route is set
// up, so that no request fails later.
func (l *Limiter) CheckCost(scope string, cost int64) error {
	s := l.scopes[scope]
	if s == nil {
		return fmt.Errorf("ratescope: unknown scope %q", scope)
	}
	for _, k := range s.kinds {
		if cost < 1 || cost > k.minimum {
			return fmt.Errorf("ratescope: cost %d for scope %q: want 1 to %d, the smallest limit", cost, scope, k.minimum)
		}
	}
	return nil
}

// Caller returns who made r: the signed-in user if user is not empty,
// otherwise an anonymous caller counted by the network of its address
// ([ClientAddr] with the configured number of proxies, then the IPv6 prefix).
func (l *Limiter) Caller(r *http.Request, user string) Caller {
	if user != "" {
		return Caller{User: user}
	}
	var forwarded []string
	if l.proxies.n > 0 {
		forwarded = r.Header["X-Forwarded-For"]
	}
	a := ClientAddr(r.RemoteAddr, forwarded, l.proxies)
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
// The error is not nil only for a mistake of the program: an unknown scope
// or a cost outside 1 to the smallest limit ([Limiter.CheckCost]); the
// Decision then denies. A store failure is not returned: the Decision
// allows the request, with Counted false and StoreErr set.
func (l *Limiter) AllowN(ctx context.Context, scope string, caller Caller, cost int64) (Decision, error) {
	var d Decision
	s := l.scopes[scope]
	if s == nil {
		d.Scope, d.Caller, d.Cost = scope, caller, cost
		return d, fmt.Errorf("ratescope: unknown scope %q", scope)
	}
	if cost < 1 || cost > s.kinds[caller.Kind()].minimum {
		d.Scope, d.Caller, d.Cost = scope, caller, cost
		return d, l.CheckCost(scope, cost)
	}
	l.decide(ctx, s, caller, cost, &d)
	return d, nil
}

// decide fills d with the decision on a request whose cost fits the scope.
func (l *Limiter) decide(ctx context.Context, s *scopeLimits, caller Caller, cost int64, d *Decision) {
	k := &s.kinds[caller.Kind()]
	d.Scope, d.Caller, d.Cost, d.limits = s.name, caller, cost, k
	now := l.now()
	res, err := l.store.Take(ctx, Request{Scope: s.name, Caller: caller, Limits: k.rates, Cost: cost, Now: now})
	if err != nil {
		// A caller that hung up (its context ended) is no failure of the
		// store: neither logged nor counted.
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			l.failures.Add(1)
			l.errLog.log(ctx, l.logger, now, s.name, err)
		}
		d.Allowed = true
		d.StoreErr = err
		return
	}
	d.Allowed, d.Counted = res.Allowed, true
	d.n = len(k.rates)
	d.status = res.Limits
	for i := range d.n {
		st := &res.Limits[i]
		d.RetryAfter = max(d.RetryAfter, st.RetryAfter)
		if st.Remaining < k.warnAt[i] {
			d.Load = true
		}
	}
}

// A Guard decides the requests of one scope at one cost: what a middleware
// does for every request, in the same way for every framework. Build it
// once per route with [Limiter.Guard]; it is safe for concurrent use.
type Guard struct {
	lim   *Limiter
	scope *scopeLimits
	cost  int64
}

// DefaultScope is the scope a [Limiter.Guard] built with an empty scope
// name decides in.
const DefaultScope = "api"

// Guard returns a Guard for requests of the given cost in scope, or the
// error of [Limiter.CheckCost], so that a route set up with a bad scope or
// cost fails at startup rather than on a request. An empty scope is
// [DefaultScope]; a cost of 0 is 1.
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
	return &Guard{lim: l, scope: l.scopes[scope], cost: cost}, nil
}

// Caller is [Limiter.Caller]: who made r, user being the signed-in user's
// id or "" for an anonymous caller.
func (g *Guard) Caller(r *http.Request, user string) Caller {
	return g.lim.Caller(r, user)
}

// Decide decides a request by caller, counting it if allowed, and writes
// the decision's headers to h ([Decision.SetHeaders]). The caller answers
// 429 when the decision does not allow the request. A store failure allows
// the request, as for [Limiter.AllowN].
func (g *Guard) Decide(ctx context.Context, caller Caller, h http.Header) *Decision {
	// One allocation holds the decision, its header values and the bytes
	// of its RateLimit value.
	m := new(struct {
		d       Decision
		scratch [rateLimitLen]byte
	})
	d := &m.d
	d.scratch = &m.scratch
	g.lim.decide(ctx, g.scope, caller, g.cost, d)
	d.SetHeaders(h)
	return d
}

// Exempt returns the decision for a caller exempt from the limits (an
// administrator): allowed, not counted, and with no headers to write.
func (g *Guard) Exempt(caller Caller) *Decision {
	return &Decision{Allowed: true, Scope: g.scope.name, Caller: caller, Cost: g.cost}
}

// StoreFailures returns how many decisions failed open because the store
// returned an error, since the Limiter was built. An error caused by the end
// of the request's context (a client that hung up) is not counted.
func (l *Limiter) StoreFailures() int64 {
	return l.failures.Load()
}

// errorLog logs at most one store error per interval, with the number of
// errors left out since the last record, so that a dead store does not
// flood the log.
type errorLog struct {
	every time.Duration
	mu    sync.Mutex
	next  time.Time
	quiet int64
}

func (e *errorLog) log(ctx context.Context, logger *slog.Logger, now time.Time, scope string, err error) {
	e.mu.Lock()
	if now.Before(e.next) {
		e.quiet++
		e.mu.Unlock()
		return
	}
	quiet := e.quiet
	e.quiet = 0
	e.next = now.Add(e.every)
	e.mu.Unlock()
	logger.LogAttrs(ctx, slog.LevelError, "ratescope: store failed; request allowed without counting (fail open)",
		slog.String("scope", scope), slog.String("error", err.Error()), slog.Int64("suppressed", quiet))
}
