package balance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/ratescope/ratescope/core"
)

// Config configures a [Guard]. Zero fields take the defaults stated on
// each, those of [DefaultConfig].
type Config struct {
	// Limiter is the limiter of the application's window limits: the
	// guard takes from it its clock (Config.Now), logger and log interval,
	// allowlists (Config.ExemptNetworks, Config.ExemptUsers), header
	// policy (Config.Headers) and Observe hook, and it counts the store's
	// failures ([core.Limiter.StoreFailures]). Required.
	Limiter *core.Limiter

	// Store keeps the balances: memstore or redisstore. It may be the
	// limiter's store. Required.
	Store Store

	// Scope is the name of the balance scope, following the rules of
	// [core.Scope] names. Each caller, anonymous or signed in, has one
	// balance per scope and store: two guards of one name on one store
	// share them. Required.
	Scope string

	// Policy is how the balance decays and where the caller is warned and
	// dropped. Default: the zero Policy, rippled's figures; any other must
	// set its window and thresholds, and a zero WarnCost or DropCost is
	// scaled with its threshold.
	Policy Policy

	// FailMode says what the scope does with a request while the store
	// fails, as [core.Scope.FailMode] does: [core.FailOpen] serves it,
	// [core.FailClosed] refuses it. A balance scope cannot fail local
	// (a decaying balance kept in memory has no way into the store):
	// [New] fails. Default: core.FailOpen.
	FailMode core.FailMode
}

// DefaultConfig returns a Config with every default filled in except the
// Limiter, the Store and the Scope, which must be set. Its Policy is
// rippled's figures, whose WarnCost and DropCost are 0: New scales them
// with the thresholds, so that changing the thresholds changes them too.
func DefaultConfig() Config {
	return Config{Policy: defaultPolicy()}
}

// withDefaults returns c with its defaults applied.
func (c Config) withDefaults() Config {
	c.Policy = c.Policy.withDefaults()
	return c
}

// Validate reports every problem with c, joined: a missing Limiter, Store
// or Scope, a bad Scope name, a figure of the Policy out of range or left
// zero, a Warn above Drop, a DropCost that keeps a caller retrying once a
// second out for ever.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Limiter == nil {
		errs = append(errs, errors.New("no Limiter: build one with core.New"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("no Store: use memstore or redisstore"))
	}
	if c.Scope == "" {
		errs = append(errs, errors.New("no Scope: name the balance scope, such as \"ledger\" (lower-case letters, digits, '.', '_' and '-'); it is required"))
	} else if !validName(c.Scope) {
		errs = append(errs, fmt.Errorf("Scope %q: use lower-case letters, digits, '.', '_' and '-', not ending in .anon or .user", c.Scope))
	}
	switch c.FailMode {
	case core.FailOpen, core.FailClosed:
	case core.FailLocal:
		errs = append(errs, fmt.Errorf("FailMode %s: a balance scope fails open or closed, not local; use core.FailClosed to refuse while the store fails", c.FailMode))
	default:
		errs = append(errs, fmt.Errorf("FailMode %s: want core.FailOpen or core.FailClosed", c.FailMode))
	}
	errs = append(errs, c.Policy.validate())
	return errors.Join(errs...)
}

// A Guard charges the requests of one balance scope to their callers'
// balances. Build it once, with [New], for the routes or the WebSocket
// server of the scope; it is safe for concurrent use.
type Guard struct {
	cfg     Config
	now     func() time.Time
	hook    func(context.Context, core.Event)
	logger  *slog.Logger
	headers core.HeaderMode
	dropLog rateLog // refusals of the scope's dropped callers, all callers together
}

// New returns a Guard for cfg, or the error of [Config.Validate].
func New(cfg Config) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("balance: invalid config: %w", err)
	}
	cfg = cfg.withDefaults()
	lc := cfg.Limiter.Config()
	return &Guard{
		cfg: cfg, now: lc.Now, hook: lc.Observe, logger: lc.Logger, headers: lc.Headers,
		dropLog: rateLog{every: lc.ErrorLogInterval},
	}, nil
}

// Charge charges a request of the given cost by caller and returns the
// decision. A cost of 0 charges nothing but is decided all the same: a
// dropped caller is refused, and charged the scope's DropCost. A cost
// below 0 is 0, and a cost too large for the balance fills it (the store
// saturates it), so that no request earns a caller credit: a cost of
// math.MaxInt64 serves the request if the caller was below the drop
// threshold and refuses the caller's requests until the balance decays.
// [CostReference] and the other Cost constants name rippled's costs.
//
// When the caller becomes dropped (a request that was served leaves its
// balance at or above the drop threshold, so that its next requests are
// refused until the balance decays below it), Charge logs it once, at
// warning level, in the words of the XRP Ledger server:
//
//	Consumer entry 192.0.2.1 dropped with balance 15970 at or above drop threshold 15000
//
// with the caller, balance (after the request's charges), threshold and
// scope as attributes too. rippled writes that line on every refused
// request, with the balance before the refusal's charge; ratescope writes
// it once per crossing, so that a dropped caller cannot flood the log.
// The refusals that follow, of any dropped caller of the scope, are logged
// at info level at most once per the limiter's Config.ErrorLogInterval:
// the line names the caller and balance of the refusal logged, and its
// attribute suppressed_in_scope counts the refusals of the scope, of
// every caller, left out since the last such line. A store failure allows
// the request uncharged, logged and counted by the limiter as its own
// ([core.Limiter.StoreFailed]), unless the scope fails closed
// (Config.FailMode core.FailClosed): it is then refused, with Outcome
// [core.OutcomeFailedClosed]. A caller on the limiter's allowlists
// ([core.Limiter.Exempt]) is decided as by [Guard.Exempt]. The limiter's
// Config.Observe sees every decision, with ctx.
func (g *Guard) Charge(ctx context.Context, caller core.Caller, cost int64) *Decision {
	lim := g.cfg.Limiter
	if lim.Exempt(caller) {
		return g.Exempt(ctx, caller)
	}
	cost = max(cost, 0)
	d := &Decision{headers: g.headers}
	start := g.start()
	now := g.now()
	res, err := g.cfg.Store.Charge(ctx, Request{Scope: g.cfg.Scope, Caller: caller, Policy: g.cfg.Policy, Cost: cost, Now: now})
	if err != nil {
		d.StoreErr, d.Outcome = err, core.OutcomeFailedClosed
		if g.cfg.FailMode != core.FailClosed {
			d.Allowed, d.Outcome = true, core.OutcomeFailedOpen
		}
		lim.StoreFailed(ctx, g.cfg.Scope, err, d.Outcome)
		g.observe(ctx, caller, cost, d.Outcome, start)
		return d
	}
	d.Balance = res.Balance
	d.Allowed = !res.Dropped
	d.Load = res.Warned
	d.Outcome = core.OutcomeAllowed
	if res.Dropped {
		d.Outcome = core.OutcomeDenied
	}
	defer g.observe(ctx, caller, cost, d.Outcome, start)
	drop := g.cfg.Policy.Drop
	switch {
	case !res.Dropped && res.Balance >= drop:
		who := caller.String()
		g.logger.LogAttrs(ctx, slog.LevelWarn,
			"Consumer entry "+who+" dropped with balance "+strconv.FormatInt(res.Balance, 10)+" at or above drop threshold "+strconv.FormatInt(drop, 10),
			slog.String("caller", who), slog.Int64("balance", res.Balance), slog.Int64("threshold", drop), slog.String("scope", g.cfg.Scope))
	case res.Dropped:
		if quiet, ok := g.dropLog.allow(now); ok {
			g.logger.LogAttrs(ctx, slog.LevelInfo, "ratescope: refused a request of a dropped caller",
				slog.String("scope", g.cfg.Scope), slog.String("caller", caller.String()), slog.Int64("balance", res.Before),
				slog.Int64("suppressed_in_scope", quiet))
		}
	}
	return d
}

// Exempt returns the decision for a caller exempt from the limits (an
// administrator): allowed, never charged, warned or dropped, with outcome
// [core.OutcomeExempt]. The limiter's Config.Observe sees it, with ctx.
func (g *Guard) Exempt(ctx context.Context, caller core.Caller) *Decision {
	g.observe(ctx, caller, 0, core.OutcomeExempt, time.Time{})
	return &Decision{Allowed: true, Outcome: core.OutcomeExempt}
}

// Reset sets the balance of caller back to zero, for an operator who
// unblocks a caller, as [core.Limiter.Reset] does for a window scope: its
// next request is charged as its first. Other callers keep their
// balances; a caller with no balance is no error. It is safe to call
// concurrently with Charge. On success the limiter's Config.Observe
// receives an Event whose Outcome is [core.OutcomeReset]; the error is the
// store's, wrapped, and nothing is observed then.
func (g *Guard) Reset(ctx context.Context, caller core.Caller) error {
	start := g.start()
	req := Request{Scope: g.cfg.Scope, Caller: caller, Policy: g.cfg.Policy, Now: g.now()}
	if err := g.cfg.Store.ResetBalance(ctx, req); err != nil {
		return fmt.Errorf("balance: reset %q in scope %q: %w", caller, g.cfg.Scope, err)
	}
	g.observe(ctx, caller, 0, core.OutcomeReset, start)
	return nil
}

// start returns the time a decision begins, read only when a hook will
// want the duration.
func (g *Guard) start() time.Time {
	if g.hook == nil {
		return time.Time{}
	}
	return time.Now()
}

// observe calls the hook, if any, with the event of a decision of the
// scope and the time since start (none for the zero start of a decision
// that did not ask the store).
func (g *Guard) observe(ctx context.Context, caller core.Caller, cost int64, outcome core.Outcome, start time.Time) {
	if g.hook == nil {
		return
	}
	e := core.Event{Scope: g.cfg.Scope, Caller: caller, Cost: cost, Outcome: outcome}
	if !start.IsZero() {
		e.Duration = time.Since(start)
	}
	g.hook(ctx, e)
}

// rateLog lets through at most one log record per interval, and counts
// those left out since the last one, as the limiter's own logs do.
type rateLog struct {
	every time.Duration
	mu    sync.Mutex
	next  int64 // Unix nanoseconds before which records are left out
	quiet int64
}

// allow reports whether to log a record at now and, if so, how many were
// left out since the last.
func (e *rateLog) allow(now time.Time) (suppressed int64, ok bool) {
	t := now.UnixNano()
	e.mu.Lock()
	defer e.mu.Unlock()
	if t < e.next {
		e.quiet++
		return 0, false
	}
	e.next = t + int64(e.every)
	suppressed, e.quiet = e.quiet, 0
	return suppressed, true
}
