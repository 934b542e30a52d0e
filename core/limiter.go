package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// A Limiter decides whether each request may proceed, by scope and caller.
//
// It finds who is calling ([Limiter.Caller]), asks its [Store] to take the
// request's cost from every limit of the scope for that kind of caller, and
// returns a [Decision] that says whether to serve the request, with the
// headers to send. If the store fails, the request is allowed and not
// counted (fail open), refused in a scope that fails closed, or decided in
// memory in a scope that fails local or when the store answered late (see
// [FailMode]), and the error is logged and counted. A caller on an allowlist
// (Config.ExemptNetworks, Config.ExemptUsers) is allowed without asking the
// store.
//
// A Limiter is safe for concurrent use. Build it with [New].
type Limiter struct {
	store     Store
	scopes    map[string]*scopeLimits
	proxies   proxyCount
	trusted   Networks
	bits6     int
	now       func() time.Time
	hook      func(context.Context, Event)
	logger    *slog.Logger
	errLog    rateLog
	shadowLog rateLog
	failures  atomic.Int64
	config    Config

	exempt    *exemptions // nil without allowlists (caller.go)
	closedLog rateLog     // failures of scopes that fail closed (failclosed.go)
	localLog  rateLog     // decisions made in memory (local.go)

	planLog rateLog // requests on unknown plans (plan.go)
}

// scopeLimits is a scope resolved once at construction: its rates and
// precomputed header values for each kind of caller.
type scopeLimits struct {
	name   string
	shadow bool     // the limiter or the scope is in shadow mode
	mode   FailMode // what the scope does when the store fails
	kinds  [2]kindLimits

	// plans are the scope's plans by name, the scope's own limits under
	// "", shared by the scope and its plans; nil without plans (plan.go).
	plans map[string]*scopeLimits
}

type kindLimits struct {
	counter Counter // the store bound to the scope, kind and these rates
	rates   []Rate
	minimum int64 // the smallest Limit: the largest cost a request may have
	warnAt  [MaxLimits]int64
	policy  string // the RateLimit-Policy field value
	legacy  bool
	headers HeaderMode // Config.Headers
	names   [MaxLimits]string
	// parts[i] starts limit i's entry in the RateLimit value: a ", "
	// after the first, its name and ";r=".
	parts [MaxLimits]string

	plan string // the plan of these limits, or "" (plan.go)

	// local is what the process knows of these callers, to decide in
	// memory (local.go): nil for a store that is not shared (memstore),
	// unless the scope fails local.
	local *localView
}

// New returns a Limiter for cfg, or the error of [Config.Validate].
func New(cfg Config) (*Limiter, error) {
	resolved, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("ratescope: invalid config: %w", err)
	}
	if n := cfg.NumProxies; n != nil {
		cfg.NumProxies = new(*n) // the caller's variable may change later
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
	cfg.ExemptNetworks, cfg.ExemptUsers = slices.Clone(cfg.ExemptNetworks), slices.Clone(cfg.ExemptUsers)
	l := &Limiter{
		store:     cfg.Store,
		scopes:    make(map[string]*scopeLimits, len(resolved)),
		proxies:   proxiesOf(cfg.NumProxies),
		trusted:   cfg.TrustedProxies,
		bits6:     cfg.IPv6Bits,
		now:       cfg.Now,
		hook:      cfg.Observe,
		logger:    cfg.Logger,
		errLog:    rateLog{every: cfg.ErrorLogInterval},
		shadowLog: rateLog{every: cfg.ErrorLogInterval},
		closedLog: rateLog{every: cfg.ErrorLogInterval},
		localLog:  rateLog{every: cfg.ErrorLogInterval},
		exempt:    newExemptions(&cfg),
		planLog:   rateLog{every: cfg.ErrorLogInterval},
	}
	for _, name := range sortedNames(resolved) {
		s := resolved[name]
		sl := &scopeLimits{name: name, shadow: s.Shadow, mode: s.FailMode}
		for k, rates := range [2][]Rate{s.Anon, s.User} {
			sl.kinds[k] = newKindLimits(name, Kind(k), rates, cfg.LoadRatio, cfg.LegacyHeaders)
			sl.kinds[k].headers = cfg.Headers
			if Kind(k) == User && len(s.Plans) > 0 {
				// The widest limits first, so that the store makes the
				// count of every plan wide enough for all of them.
				if _, err := bind(cfg.Store, name, User, storeRates(s)); err != nil {
					return nil, err
				}
			}
			c, err := bind(cfg.Store, name, Kind(k), rates)
			if err != nil {
				return nil, err
			}
			sl.kinds[k].counter = c
			sl.kinds[k].local = newLocal(&cfg, s.FailMode, rates)
		}
		if err := l.initPlans(sl, s, &cfg); err != nil {
			return nil, err
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

// bind binds store to scope and kind with limits, or returns an error that
// names them.
func bind(store Store, scope string, kind Kind, limits []Rate) (Counter, error) {
	c, err := store.Bind(scope, kind, limits)
	if err == nil && c == nil {
		err = errors.New("no counter")
	}
	if err != nil {
		return nil, fmt.Errorf("ratescope: the store cannot keep scope %q for %s callers (%s): %w", scope, kind, periodsOf(limits), err)
	}
	return c, nil
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
	if n := l.config.NumProxies; n != nil {
		c.NumProxies = new(*n)
	}
	c.TrustedProxies = slices.Clone(l.config.TrustedProxies)
	c.ExemptNetworks = slices.Clone(l.config.ExemptNetworks)
	c.ExemptUsers = slices.Clone(l.config.ExemptUsers)
	return c
}

// checkCost returns an error unless requests of the given cost can be
// decided in scope: a known scope and a cost of at least 1.
// [GuardConfig.Validate] calls it when a route is set up, so that no
// request fails later.
//
// A cost above the smallest limit of a kind of caller is not an error: it
// is clamped to that limit when the request is decided (see
// [Limiter.AllowN]), so that lowering a rate never stops the application
// from starting. [NewGuard] logs a warning for it.
func (l *Limiter) checkCost(scope string, cost int64) error {
	s := l.scopes[scope]
	if s == nil {
		return fmt.Errorf("%w %q: the limiter's scopes are %s; name one of them, or add a core.Scope named %q to core.Config.Scopes", ErrUnknownScope, scope, strings.Join(slices.Sorted(maps.Keys(l.scopes)), ", "), scope)
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
// or a cost below 1; the Decision then denies, with
// OutcomeNone, and is not observed. A store failure is not returned: the
// Decision allows the request, with Checked false and StoreErr set.
func (l *Limiter) AllowN(ctx context.Context, scope string, caller Caller, cost int64) (Decision, error) {
	var d Decision
	s := l.scopes[scope]
	if s == nil || cost < 1 {
		d.Scope, d.Caller, d.Cost = scope, caller, cost
		return d, l.checkCost(scope, cost)
	}
	start := l.start()
	l.decide(ctx, s, caller, s.kinds[caller.Kind()].clampCost(cost), false, &d)
	l.observe(ctx, &d, start)
	return d, nil
}

// storeFailed counts and logs, at a limited rate, a store error on a
// decision in scope at now, whose outcome is o: the request allowed
// without counting (OutcomeFailedOpen), refused because the scope fails
// closed (OutcomeFailedClosed), or decided in memory (OutcomeLocal), each
// on a log line of its own with a rate of its own.
//
// A caller that hung up (its context ended, and the store's error is that
// context's) is no failure of the store: neither logged nor counted.
func (l *Limiter) storeFailed(ctx context.Context, now time.Time, scope string, err error, o Outcome) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return
	}
	l.failures.Add(1)
	log, level, msg := &l.errLog, slog.LevelError, "ratescope: store failed; request allowed without counting (fail open)"
	switch o {
	case OutcomeFailedClosed:
		log, msg = &l.closedLog, "ratescope: store failed; request refused (the scope fails closed)"
	case OutcomeLocal:
		log, level, msg = &l.localLog, slog.LevelWarn, "ratescope: store failed or answered late; request decided in the process's memory"
	}
	if quiet, ok := log.allow(now); ok {
		l.logger.LogAttrs(ctx, level, msg,
			slog.String("scope", scope), slog.String("error", err.Error()), slog.Int64("suppressed", quiet))
	}
}

// decide fills d with the decision on a request whose cost fits the scope:
// the one place that exempts a caller, when the application's own rule
// (exempt) or the allowlists say so.
func (l *Limiter) decide(ctx context.Context, s *scopeLimits, caller Caller, cost int64, exempt bool, d *Decision) {
	if exempt || l.exempt != nil && l.exempt.match(caller) {
		exemptDecision(d, s, caller, cost)
		return
	}
	k := &s.kinds[caller.Kind()]
	d.Scope, d.Caller, d.Cost, d.limits = s.name, caller, cost, k
	now := l.now()
	// The result goes straight into d: it is the largest part of a
	// decision, and copied once.
	var err error
	key := caller.Key() // once: a long id's key is its digest
	if k.local != nil && k.local.owing.Load() > 0 {
		l.carry(ctx, k, key, now)
	}
	d.res, err = k.counter.Take(ctx, key, cost, now)
	res := &d.res
	switch {
	case err == nil:
		d.Outcome = OutcomeAllowed
		if !res.Allowed {
			d.Outcome = OutcomeDenied
		}
		if k.local != nil {
			at := res.At
			if k.local.note(key, cost, res, now) {
				// Allowed by the store, but requests decided in memory
				// since its last answer, which it has not counted yet,
				// leave no room: refused, and given back (local.go).
				_ = k.counter.GiveBack(context.WithoutCancel(ctx), key, cost, at)
				d.Outcome = OutcomeLocal
			}
			if k.local.owing.Load() > 0 {
				l.carryAll(k)
			}
		}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The caller hung up: no failure of the store, decided as the mode
		// says without a log.
		fallthrough
	case k.local == nil || s.mode == FailClosed || s.mode == FailOpen && !errors.Is(err, ErrLate):
		*res = Result{}
		if s.mode == FailClosed {
			l.failClosed(ctx, now, d, err)
			return
		}
		l.storeFailed(ctx, now, s.name, err, OutcomeFailedOpen)
		d.Allowed = true
		d.Outcome = OutcomeFailedOpen
		d.StoreErr = err
		return
	default:
		l.decideLocally(ctx, now, s, k, key, d, err, !errors.Is(err, ErrLate))
	}
	d.Allowed, d.Checked = res.Allowed, true
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

// StoreFailures returns how many decisions failed open, failed closed in
// a scope that fails closed, or were decided in memory ([OutcomeLocal]),
// because the store returned an error, since the Limiter was built. An error caused by the end
// of the request's context (a client that hung up) is not counted.
func (l *Limiter) StoreFailures() int64 {
	return l.failures.Load()
}

// observe calls the hook, if any, with a copy of d; start is when the
// decision began (the zero Time if the hook is unset). The hook may keep
// what it gets, against Event's rule, so it never gets d itself: d may be
// an adapter's variable, and stays on its stack when there is no hook.
func (l *Limiter) observe(ctx context.Context, d *Decision, start time.Time) {
	if l.hook != nil {
		seen := *d
		l.emit(ctx, Event{Scope: d.Scope, Caller: d.Caller, Cost: d.Cost, Outcome: d.Outcome, Decision: &seen}, start)
	}
}

// emit calls the hook with e and the time since start (none for the zero
// start of a decision that did not ask the store).
func (l *Limiter) emit(ctx context.Context, e Event, start time.Time) {
	if !start.IsZero() && e.Outcome != OutcomeExempt {
		e.Duration = time.Since(start)
	}
	l.hook(ctx, e)
}

// start returns the time a decision begins, read only when a hook will
// want the duration.
func (l *Limiter) start() time.Time {
	if l.hook == nil {
		return time.Time{}
	}
	return time.Now()
}
