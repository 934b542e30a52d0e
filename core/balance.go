package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CostClasses are the costs of the classes of request of a [BalanceScope], as the
// XRP Ledger server (rippled) weighs them by how much work they take. A
// route or message picks one (or any other number) as its cost.
type CostClasses struct {
	// Reference is the cost of an ordinary request. Default: 20.
	Reference int64
	// Malformed is the cost of a request the server cannot understand (an
	// unknown command). Default: 100.
	Malformed int64
	// Medium is the cost of a request of some weight (a ledger, an account's
	// transactions). Default: 400.
	Medium int64
	// Heavy is the cost of an expensive request (a path search). Default:
	// 3000.
	Heavy int64
}

// DefaultCostClasses returns rippled's costs: 20, 100, 400 and 3000.
func DefaultCostClasses() CostClasses {
	return CostClasses{Reference: 20, Malformed: 100, Medium: 400, Heavy: 3000}
}

// A BalancePolicy is the figures of a balance limit: how the balance decays
// and where the caller is warned and dropped.
//
// The zero BalancePolicy is [DefaultBalancePolicy], rippled's figures. Any
// other policy is taken as written, every field, so that a zero WarnCost,
// DropCost or WarnEvery means zero: start from DefaultBalancePolicy and
// change the figures you need. A policy that sets some figures and leaves
// Window, Warn or Drop zero is an error of [New] (E006), so that a figure
// left out is never silently zero (ADR 0070).
//
// Each caller has a sum of request costs that loses ceil(sum/W) per whole
// second, W being Window in seconds; its balance is sum/W, so that a steady
// cost of R per second settles near a balance of R. A request at a balance
// at or above Drop is refused and costs DropCost instead of its own cost; a
// request served that leaves the balance at or above Warn tells the caller
// "load", and the warning costs WarnCost, at most once per WarnEvery. Both
// comparisons are inclusive. After more than 4*W whole seconds without a
// request the balance is zero. See ADR 0020.
type BalancePolicy struct {
	// Window is the decay window, a whole number of seconds from 1s up to
	// [MaxBalanceWindow]. Default (zero policy): 32s.
	Window time.Duration
	// Warn is the warning threshold, at least 1. Default (zero policy):
	// 5000.
	Warn int64
	// WarnCost is the cost of a warning, 0 or more; 0 makes warnings free.
	// Default (zero policy): 2000.
	WarnCost int64
	// WarnEvery is the least time between two charged warnings of one
	// caller, 0 or more; 0 charges every warning. Default (zero policy):
	// 1s.
	WarnEvery time.Duration
	// Drop is the drop threshold, at least 1. Default (zero policy): 15000.
	Drop int64
	// DropCost is the cost of each refused request, 0 or more; 0 lets a
	// dropped caller's balance decay while it keeps asking. Default (zero
	// policy): 3000.
	DropCost int64
}

// MaxBalanceWindow is the longest decay window: the stores step a balance
// once per elapsed second, up to 4*Window steps, so the window bounds the
// work of one decision.
const MaxBalanceWindow = time.Hour

// DefaultBalancePolicy returns rippled's figures: a 32 s window, a warning
// at 5000 costing 2000 at most once a second, a drop at 15000 costing 3000.
func DefaultBalancePolicy() BalancePolicy {
	return BalancePolicy{Window: 32 * time.Second, Warn: 5000, WarnCost: 2000, WarnEvery: time.Second, Drop: 15000, DropCost: 3000}
}

// A BalanceScope is a named group of requests limited by a decaying balance
// of their costs (the XRP Ledger server's model) instead of windows: a
// WebSocket or JSON-RPC API. Every caller, anonymous or signed in, has one
// balance per balance scope. A zero BalancePolicy is rippled's, and any
// other is taken as written (see [BalancePolicy]); zero fields of Costs
// take rippled's costs. The Name follows the rules of [Scope] names; balance
// scopes and window scopes have names of their own.
//
// FailClosed makes the scope refuse its requests while the store fails, as
// [Scope.FailClosed] does. Default: false, the scope fails open.
type BalanceScope struct {
	Name string
	BalancePolicy
	Costs CostClasses

	FailClosed bool
}

// withDefaults returns rippled's policy for the zero policy, and p as
// written otherwise.
func (p BalancePolicy) withDefaults() BalancePolicy {
	if p == (BalancePolicy{}) {
		return DefaultBalancePolicy()
	}
	return p
}

func (c CostClasses) withDefaults() CostClasses {
	d := DefaultCostClasses()
	for _, f := range []struct{ v, d *int64 }{
		{&c.Reference, &d.Reference}, {&c.Malformed, &d.Malformed}, {&c.Medium, &d.Medium}, {&c.Heavy, &d.Heavy},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	return c
}

// validate reports every problem with p, after defaults.
func (p BalancePolicy) validate() error {
	var errs []error
	if p.Window == 0 || p.Warn == 0 || p.Drop == 0 {
		var unset []string
		for _, f := range []struct {
			name string
			zero bool
		}{{"Window", p.Window == 0}, {"Warn", p.Warn == 0}, {"Drop", p.Drop == 0}} {
			if f.zero {
				unset = append(unset, f.name)
			}
		}
		errs = append(errs, fmt.Errorf("BalancePolicy leaves %s zero: a policy with any figure set is taken as written (zero is zero); start from core.DefaultBalancePolicy() and change the figures you need, or leave the whole policy zero for rippled's", strings.Join(unset, ", ")))
	}
	if p.Window != 0 && p.Window < time.Second || p.Window > MaxBalanceWindow || p.Window%time.Second != 0 {
		errs = append(errs, fmt.Errorf("Window %s: want a whole number of seconds from 1s to %s", p.Window, MaxBalanceWindow))
	}
	if p.WarnEvery < 0 {
		errs = append(errs, fmt.Errorf("WarnEvery %s: must not be negative", p.WarnEvery))
	}
	for _, f := range []struct {
		name string
		v    int64
		min  int64
	}{{"Warn", p.Warn, 1}, {"WarnCost", p.WarnCost, 0}, {"Drop", p.Drop, 1}, {"DropCost", p.DropCost, 0}} {
		// A zero threshold is reported above.
		if f.v < 0 || f.v > MaxLimit {
			errs = append(errs, fmt.Errorf("%s %d: want %d to %d", f.name, f.v, f.min, int64(MaxLimit)))
		}
	}
	return errors.Join(errs...)
}

// resolveBalances applies the defaults to every balance scope and reports
// every problem: a bad name, a name given twice, a bad figure.
func resolveBalances(scopes []BalanceScope) (map[string]*BalanceScope, error) {
	var errs []error
	out := make(map[string]*BalanceScope, len(scopes))
	for _, s := range scopes {
		if !validScopeName(s.Name) {
			errs = append(errs, fmt.Errorf("balance scope name %q: use lower-case letters, digits, '.', '_' and '-', not ending in .anon or .user", s.Name))
			continue
		}
		if _, dup := out[s.Name]; dup {
			errs = append(errs, fmt.Errorf("balance scope %q is defined twice", s.Name))
			continue
		}
		s.BalancePolicy = s.BalancePolicy.withDefaults()
		s.Costs = s.Costs.withDefaults()
		if err := s.BalancePolicy.validate(); err != nil {
			errs = append(errs, fmt.Errorf("balance scope %q: %w", s.Name, err))
		}
		for _, c := range []int64{s.Costs.Reference, s.Costs.Malformed, s.Costs.Medium, s.Costs.Heavy} {
			if c < 0 || c > MaxLimit {
				errs = append(errs, fmt.Errorf("balance scope %q: cost %d: want 0 to %d", s.Name, c, int64(MaxLimit)))
			}
		}
		out[s.Name] = &s
	}
	return out, errors.Join(errs...)
}

// A BalanceStore is a [Store] that also keeps decaying balances. It is an
// optional interface: [New] checks that Config.Store has it when
// Config.Balances names balance scopes, and fails otherwise, so that a
// store that cannot keep balances is never silently left to ignore them.
//
// Charge decides one request as [BalancePolicy] describes, atomically
// (the decay, the checks and the charges are one step, even when several
// processes share the store), at req.Now. Balances are kept per scope and
// per caller; both kinds of caller share the scope's policy. Every store
// runs the arithmetic of package internal/decay and passes the
// conformance cases of storetest.RunBalance. An error means the store could
// not decide; the [Limiter] then allows the request without charging it.
type BalanceStore interface {
	Charge(ctx context.Context, req BalanceRequest) (BalanceResult, error)
}

// A BalanceRequest asks a [BalanceStore] to charge Cost to the balance of
// Caller in Scope.
type BalanceRequest struct {
	// Scope is the name of the balance scope.
	Scope string
	// Caller is whose balance is charged.
	Caller Caller
	// Policy is the scope's policy, defaults applied.
	Policy BalancePolicy
	// Cost is the request's cost, 0 or more: a cost of 0 reads the balance
	// (and may still warn or drop the caller).
	Cost int64
	// Now is the time of the request, as for [Request].
	Now time.Time
}

// A BalanceResult is a [BalanceStore]'s answer to a [BalanceRequest].
type BalanceResult struct {
	// Before is the balance before the request, after the decay.
	Before int64
	// Balance is the balance after the request's charges.
	Balance int64
	// Dropped reports that the caller was at or above the drop threshold:
	// the request is refused, and DropCost was charged instead of Cost.
	Dropped bool
	// Warned reports that the balance is at or above the warning threshold
	// after a request that was served.
	Warned bool
	// WarnCharged reports that the warning cost was charged (at most once
	// per WarnEvery).
	WarnCharged bool
}

// A BalanceDecision is the answer to one request in a balance scope.
//
// The zero BalanceDecision refuses.
type BalanceDecision struct {
	// Allowed reports whether the request may be served: false when the
	// caller is dropped, or when the store failed in a scope that fails
	// closed (Outcome [OutcomeFailedClosed]). Answer a WebSocket caller
	// with a close of code 1008 (package wslimit; 1013 when failed
	// closed) and a JSON-RPC caller with 503 (the adapters'
	// DenyOverloaded).
	Allowed bool
	// Load reports that the caller is at or above the warning threshold:
	// add "warning":"load" to the reply ([WarnJSON]).
	Load bool
	// Checked reports whether the store checked the request against the
	// balance, as [Decision.Checked] does: true when it was served or
	// dropped (a drop charges DropCost); false when the
	// store failed (fail open) or the caller is exempt.
	Checked bool
	// Outcome is what became of the request: [OutcomeAllowed],
	// [OutcomeDenied] (dropped), [OutcomeFailedOpen], [OutcomeExempt] or
	// [OutcomeFailedClosed].
	Outcome Outcome
	// headers is the limiter's Config.Headers; zero, HeadersAll, in a
	// BalanceDecision made by hand. (The small fields come first, so that
	// a BalanceDecision stays in the 112-byte size class.)
	headers HeaderMode
	// Scope is the name of the balance scope.
	Scope string
	// Caller is whose balance was charged.
	Caller Caller
	// Cost is the request's cost.
	Cost int64
	// Balance is the caller's balance after the request.
	Balance int64
	// StoreErr is the store's error when the decision failed open or
	// failed closed.
	StoreErr error
}

// SetHeaders writes "Ratescope-Warning: load" ([HeaderWarning]) to h when
// the caller is at or above the warning threshold, Retry-After (whole
// seconds, rounded up) when the scope failed closed, and nothing
// otherwise. The warning is on a served request only, so that with the
// limiter's Config.Headers at [HeadersRefused] or [HeadersNone] it writes
// nothing (the reply's "warning":"load", [WarnJSON], stays); Retry-After is
// written whatever it says.
func (d *BalanceDecision) SetHeaders(h http.Header) {
	if d.Load && d.headers.onServed() {
		h[HeaderWarning] = []string{LoadWarning}
	}
	if d.Outcome == OutcomeFailedClosed {
		h[HeaderRetryAfter] = []string{strconv.FormatInt(max(ceilSeconds(d.RetryAfter()), 1), 10)}
	}
}

// RetryAfter returns, when the scope failed closed ([OutcomeFailedClosed]),
// how long the store's error says it will fail ([RetryAfterError]), or
// [DefaultStoreRetryAfter]; 0 otherwise. It is read from StoreErr, so that
// a decision carries no field for it.
func (d *BalanceDecision) RetryAfter() time.Duration {
	if d.Outcome != OutcomeFailedClosed {
		return 0
	}
	return storeRetryAfter(d.StoreErr)
}

// A BalanceGuard charges the requests of one balance scope. Build it once per
// route with [Limiter.BalanceGuard]; it is safe for concurrent use.
type BalanceGuard struct {
	lim   *Limiter
	scope *BalanceScope
}

// initBalances resolves cfg.Balances into l, checking that the store keeps
// balances.
func (l *Limiter) initBalances(cfg *Config, resolved map[string]*BalanceScope) error {
	if len(resolved) == 0 {
		return nil
	}
	l.bstore = cfg.Store.(BalanceStore) // resolve checked it
	l.balances = resolved
	cfg.Balances = make([]BalanceScope, 0, len(resolved))
	for _, name := range sortedBalanceNames(resolved) {
		cfg.Balances = append(cfg.Balances, *resolved[name])
	}
	return nil
}

func sortedBalanceNames(m map[string]*BalanceScope) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// BalanceGuard returns the BalanceGuard of the named balance scope, or an error if
// Config.Balances does not name it.
func (l *Limiter) BalanceGuard(scope string) (*BalanceGuard, error) {
	s := l.balances[scope]
	if s == nil {
		known := "none"
		if len(l.balances) > 0 {
			known = strings.Join(sortedBalanceNames(l.balances), ", ")
		}
		return nil, fmt.Errorf("ratescope: unknown balance scope %q: the limiter's balance scopes are %s; name one of them, or add a core.BalanceScope named %q to core.Config.Balances", scope, known, scope)
	}
	return &BalanceGuard{lim: l, scope: s}, nil
}

// Scope returns the balance scope, defaults applied: its name, policy and
// costs.
func (b *BalanceGuard) Scope() BalanceScope { return *b.scope }

// Charge charges a request of the given cost by caller and returns the
// decision. A cost of 0 charges nothing but is decided all the same: a
// dropped caller is refused, and charged the scope's DropCost. A cost below
// 0 is 0: no request earns a caller credit. The scope's cost classes
// (Scope().Costs) name the usual costs.
//
// When the caller becomes dropped (a request that was served leaves its
// balance at or above the drop threshold, so that its next requests are
// refused until the balance decays below it), Charge logs it once, at
// warning level, as the XRP Ledger server does:
//
//	Consumer entry 192.0.2.1 dropped with balance 15970 at or above drop threshold 15000
//
// with the caller, balance (after the request's charges), threshold and
// scope as attributes too. The requests it then refuses are logged, at info
// level, at most once per Config.ErrorLogInterval for the whole limiter,
// with the number left out, so that a caller who keeps asking cannot flood the log. A store
// failure allows the request uncharged, logged as for [Limiter.AllowN],
// unless the scope fails closed ([BalanceScope.FailClosed]): it is then
// refused, with Outcome [OutcomeFailedClosed]. A caller on an allowlist
// (Config.ExemptNetworks, Config.ExemptUsers) is decided as by
// [BalanceGuard.Exempt].
func (b *BalanceGuard) Charge(ctx context.Context, caller Caller, cost int64) *BalanceDecision {
	l, s := b.lim, b.scope
	if l.exempt != nil && l.exempt.match(caller) {
		return b.Exempt(ctx, caller)
	}
	cost = max(cost, 0)
	d := &BalanceDecision{Scope: s.Name, Caller: caller, Cost: cost, headers: l.config.Headers}
	start := l.start()
	now := l.now()
	res, err := l.bstore.Charge(ctx, BalanceRequest{Scope: s.Name, Caller: caller, Policy: s.BalancePolicy, Cost: cost, Now: now})
	if err != nil && s.FailClosed {
		l.storeFailed(ctx, now, s.Name, err, true)
		d.StoreErr, d.Outcome = err, OutcomeFailedClosed
		l.observeBalance(ctx, d, start)
		return d
	}
	if err != nil {
		l.storeFailed(ctx, now, s.Name, err, false)
		d.Allowed, d.StoreErr, d.Outcome = true, err, OutcomeFailedOpen
		l.observeBalance(ctx, d, start)
		return d
	}
	d.Checked, d.Balance = true, res.Balance
	d.Allowed = !res.Dropped
	d.Load = res.Warned
	d.Outcome = OutcomeAllowed
	if res.Dropped {
		d.Outcome = OutcomeDenied
	}
	defer l.observeBalance(ctx, d, start)
	switch {
	case !res.Dropped && res.Balance >= s.Drop:
		who := caller.String()
		l.logger.LogAttrs(ctx, slog.LevelWarn,
			"Consumer entry "+who+" dropped with balance "+strconv.FormatInt(res.Balance, 10)+" at or above drop threshold "+strconv.FormatInt(s.Drop, 10),
			slog.String("caller", who), slog.Int64("balance", res.Balance), slog.Int64("threshold", s.Drop), slog.String("scope", s.Name))
	case res.Dropped:
		if quiet, ok := l.dropLog.allow(now); ok {
			l.logger.LogAttrs(ctx, slog.LevelInfo, "ratescope: refused a request of a dropped caller",
				slog.String("scope", s.Name), slog.String("caller", caller.String()), slog.Int64("balance", res.Before),
				slog.Int64("suppressed", quiet))
		}
	}
	return d
}

// Exempt returns the decision for a caller exempt from the limits (an
// administrator): allowed, never charged, warned or dropped, with outcome
// [OutcomeExempt]. Config.Observe sees it, with ctx.
func (b *BalanceGuard) Exempt(ctx context.Context, caller Caller) *BalanceDecision {
	d := &BalanceDecision{Allowed: true, Scope: b.scope.Name, Caller: caller, Outcome: OutcomeExempt}
	b.lim.observeBalance(ctx, d, time.Time{})
	return d
}
