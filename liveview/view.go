package liveview

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ratescope/ratescope/core"
)

// Config configures a [View]. Zero fields take the defaults stated on
// each; [DefaultConfig] returns them.
type Config struct {
	// Callers is how many callers the view keeps to find the ones refused
	// most (its sketch's capacity k), from 1 to 1,000,000, in each of two
	// periods of 15 minutes, the current one and the previous one. Memory
	// is about 360 bytes per caller kept, plus its user id twice, whatever
	// the number of callers refused; of a user id longer than the stores
	// keep, the view keeps what a store does, its digest, and its first
	// bytes for the page. With N the refusals of the two
	// periods, every caller refused more than N/Callers times in them is
	// listed, with a count too high by at most N/Callers. Default: 1000.
	Callers int

	// Listed is how many of the callers refused most the page and the
	// JSON list, at most. Default: 20.
	Listed int

	// Refresh is how often the page fetches its figures again, from
	// 100ms to 1h. Default: 2s.
	Refresh time.Duration

	// Now returns the current time: the second an event is counted in and
	// the time of a refusal. Give the limiter's clock, so that both agree.
	// Default: time.Now.
	Now func() time.Time
}

// DefaultConfig returns the configuration a zero Config stands for.
func DefaultConfig() Config {
	return Config{Callers: 1000, Listed: 20, Refresh: 2 * time.Second, Now: time.Now}
}

// Validate reports every setting out of range, naming each; zero fields
// are valid (they take their defaults).
func (c Config) Validate() error {
	var errs []error
	if c.Callers < 0 || c.Callers > 1_000_000 {
		errs = append(errs, fmt.Errorf("liveview: Config.Callers %d: want 1 to 1000000 (0 for the default, 1000)", c.Callers))
	}
	if c.Listed < 0 {
		errs = append(errs, fmt.Errorf("liveview: Config.Listed %d: want 1 or more (0 for the default, 20)", c.Listed))
	}
	if c.Refresh < 0 || (c.Refresh > 0 && c.Refresh < minRefresh) || c.Refresh > maxRefresh {
		errs = append(errs, fmt.Errorf("liveview: Config.Refresh %s: want %s to %s (0 for the default, 2s)", c.Refresh, minRefresh, maxRefresh))
	}
	return errors.Join(errs...)
}

// minRefresh and maxRefresh bound Config.Refresh. The page's script
// waits Refresh between fetches with setInterval, whose delay browsers
// hold in 32 bits of milliseconds: a longer delay wraps, and the page
// fetches without pause. An hour is far below that.
const (
	minRefresh = 100 * time.Millisecond
	maxRefresh = time.Hour
)

// withDefaults returns a copy of c with its zero fields set.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Callers = cmp.Or(c.Callers, d.Callers)
	c.Listed = cmp.Or(c.Listed, d.Listed)
	c.Refresh = cmp.Or(c.Refresh, d.Refresh)
	if c.Now == nil {
		c.Now = d.Now
	}
	return c
}

// A View is a live page of what a limiter decides: an [http.Handler] to
// mount, behind the application's own authentication, as net/http/pprof
// is, and the source of the limiter's observation hook ([View.Observe]).
// Build it with [New]. It is safe for concurrent use.
//
// A View knows only what its Observe method is given: a View whose
// Observe is not the limiter's hook (directly or through
// [core.Observers]) shows nothing, and a limiter without it pays nothing.
type View struct {
	cfg    Config
	series registry
	top    *sketch
	// limiter resets callers, once [View.AllowReset] gave it.
	limiter atomic.Pointer[Resetter]
	// token is the page's CSRF token: a POST must carry it.
	token string
}

// New returns a View, or an error naming each setting of cfg out of range.
func New(cfg Config) (*View, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &View{cfg: cfg, top: newSketch(cfg.Callers), token: newToken()}, nil
}

// newToken returns 32 random bytes in hex.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// A Resetter clears a caller's counts in a scope, as [core.Limiter.Reset]
// does: the limiter itself, or an application's type that also resets its
// balance scopes (package balance, whose guards the limiter does not
// know).
type Resetter interface {
	Reset(ctx context.Context, scope string, caller core.Caller) error
}

// AllowReset enables the page's reset buttons: a button calls
// lim.Reset with the scope and the caller as the view received them in
// its events. Without it the buttons are disabled and a reset request is
// refused with 403 Forbidden. lim must reset the scopes of the limiter the
// view observes: the *core.Limiter, or a Resetter that resets its balance
// scopes too. It is safe to call at any time; a nil lim disables the
// buttons again.
func (v *View) AllowReset(lim Resetter) {
	if l, ok := lim.(*core.Limiter); lim == nil || ok && l == nil {
		v.limiter.Store(nil)
		return
	}
	v.limiter.Store(&lim)
}

// Observe counts e: give it to core.Config.Observe, or to
// [core.Observers] with the application's other hooks. It counts every
// decision in its scope's series, by kind of caller and outcome, in the
// second of Config.Now; a refusal (core.OutcomeDenied) counts too against
// the caller in the scope, with the limit that refused it and until when
// (core.Decision.Refusing; none for an Event without a Decision); a reset (core.OutcomeReset) is marked on the
// caller's row. It takes no lock but the sketch's, for a refusal, and
// allocates nothing, but on the first event of a scope and for a user id
// longer than the view keeps, whose digest it computes. A reset asked for
// such a caller ([View.ServeHTTP]) is made on its next refusal, by
// Observe, which then waits for the Resetter.
func (v *View) Observe(ctx context.Context, e core.Event) {
	o := e.Outcome
	now := v.cfg.Now()
	switch {
	case o == core.OutcomeReset:
		v.top.markReset(e.Scope, e.Caller, now.UnixNano())
		return
	case o == core.OutcomeNone || o >= maxOutcome:
		return
	}
	c := e.Caller
	k := c.Kind()
	s := v.series.get(e.Scope)
	if !s.seen[k].Load() {
		s.seen[k].Store(true)
	}
	s.rings[k][o].add(now.Unix())
	if o != core.OutcomeDenied {
		return
	}
	var (
		limit core.Rate
		until int64
	)
	if d := e.Decision; d != nil {
		if l, ok := d.Refusing(); ok {
			limit, until = l.Rate, now.Add(l.RetryAfter).UnixNano()
		}
	}
	if v.top.add(e.Scope, c, now.UnixNano(), limit, until) {
		// A reset asked for when the view held no value of c (a long id):
		// c is that value. Once, on this refusal, the request waits for it.
		if lim := v.limiter.Load(); lim != nil {
			_ = (*lim).Reset(context.WithoutCancel(ctx), e.Scope, c) // a failure leaves the row unmarked: ask again
		}
	}
}

// A snapshot is what the view shows at one time: the page's figures, and
// its JSON answer (GET with ?format=json), whose fields docs/reference.md
// lists for scripts. A field's JSON name is part of the API.
type snapshot struct {
	// Now is when the snapshot was taken, by Config.Now.
	Now time.Time `json:"now"`
	// Series are the per-second counts of every scope and kind of caller
	// seen, for every outcome, sorted by scope, kind and outcome.
	Series []series `json:"series"`
	// Refused are the callers refused most that were last refused within
	// the last [seconds] seconds, the most refused first, at most
	// Config.Listed.
	Refused []refused `json:"refused"`
	// Refusals is N, the refusals counted in the current period of
	// [seconds] seconds and the previous one: the last 15 to 30 minutes.
	Refusals int64 `json:"refusals"`
	// Callers is the number of callers the view keeps (Config.Callers).
	Callers int `json:"callers"`
	// ErrorBound is N/Callers rounded down: no count of Refused is too
	// high by more, and every caller refused more often is kept.
	ErrorBound int64 `json:"error_bound"`
	// ResetAllowed reports whether reset requests are served
	// ([View.AllowReset]).
	ResetAllowed bool `json:"reset_allowed"`
}

// A series is the number of decisions of one scope, kind of caller and
// outcome in each of the last [seconds] seconds.
type series struct {
	// Scope is the scope's name.
	Scope string `json:"scope"`
	// Kind is "anon" or "user" (core.Kind).
	Kind string `json:"kind"`
	// Outcome is "allowed", "denied", "exempt", "shadow", "failed_open",
	// "local" (decided in the process's memory) or "failed_closed"
	// (core.Outcome).
	Outcome string `json:"outcome"`
	// Total is the sum of PerSecond.
	Total int64 `json:"total"`
	// PerSecond holds [seconds] counts, the oldest first; the last is the
	// current second, still counting.
	PerSecond []int64 `json:"per_second"`
}

// A refused is a caller the view counts refusals of, in one scope: a row
// of the page's table.
type refused struct {
	// Scope is the scope it was refused in.
	Scope string `json:"scope"`
	// Caller is who it is, as core.Caller.String writes it: a user id, an
	// address or network, or "key:" and an API key; for a user id (or
	// key) longer than the view keeps, its first bytes, its length and
	// the start of its SHA-256 digest. Two callers may write
	// alike (the user id "key:k" and the caller counted by key k), and an
	// id may hold bytes that HTML and JSON do not keep: Ref tells them
	// apart.
	Caller string `json:"caller"`
	// Ref names the caller exactly, in ASCII, for a reset request: its
	// kind, "user:" or "anon:", and the bytes of its user id (or key) or
	// network in base64url.
	Ref string `json:"ref"`
	// Kind is "anon" or "user".
	Kind string `json:"kind"`
	// Refusals is the number of refusals counted in the current and the
	// previous period: at least the true number since the view began
	// counting the caller in them, and at most Error more.
	Refusals int64 `json:"refusals"`
	// Error is how many of Refusals may be other callers' refusals: 0
	// when the caller was counted from its first refusal, at most
	// snapshot.ErrorBound.
	Error int64 `json:"error"`
	// First and Last are the first and last refusals counted in the two
	// periods.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Reset is the caller's last reset in the scope since it was counted,
	// or the zero time (left out of the JSON).
	Reset time.Time `json:"reset,omitzero"`
	// Limit is the limit that refused the caller's last refusal counted,
	// as core.Rate.String writes it ("60/min"); of several limits that
	// refused it, the one with the longest wait (core.Decision.Refusing).
	// It is empty for a refusal that names no limit, such as a balance
	// scope's (left out of the JSON).
	Limit string `json:"limit,omitempty"`
	// Until is when Limit has room again for the request it refused, if
	// the caller sends nothing meanwhile: the last refusal's time plus its
	// RetryAfter. Use it to tell a caller refused now from one refused a
	// while ago. The zero time when Limit is empty (left out of the JSON).
	Until time.Time `json:"until,omitzero"`
	// ResetPending reports that a reset was asked for a caller whose user
	// id is longer than the view keeps, and waits for its next refusal
	// (see [View.ServeHTTP]); false is left out of the JSON.
	ResetPending bool `json:"reset_pending,omitzero"`
}

// listed returns the callers the view lists at now, the most refused
// first, and the refusals counted.
func (v *View) listed(now time.Time) ([]entry, int64) {
	return v.top.snapshot(now.UnixNano(), now.Add(-seconds*time.Second).UnixNano(), v.cfg.Listed)
}

// snapshot returns what the view shows now.
func (v *View) snapshot() snapshot {
	now := v.cfg.Now()
	sec := now.Unix()
	snap := snapshot{Now: now, Callers: v.cfg.Callers, ResetAllowed: v.limiter.Load() != nil, Series: []series{}, Refused: []refused{}}
	scopes := v.series.all()
	for _, name := range slices.Sorted(maps.Keys(scopes)) {
		s := scopes[name]
		for _, k := range []core.Kind{core.Anonymous, core.User} {
			if !s.seen[k].Load() {
				continue
			}
			for _, o := range outcomes {
				counts, sum := s.rings[k][o].read(sec)
				snap.Series = append(snap.Series, series{Scope: name, Kind: k.String(), Outcome: o.String(), Total: sum, PerSecond: counts})
			}
		}
	}
	entries, n := v.listed(now)
	snap.Refusals, snap.ErrorBound = n, n/int64(v.cfg.Callers)
	for _, e := range entries {
		r := refused{
			Scope: e.scope, Caller: e.callerString(), Ref: e.who().ref(), Kind: e.who().kind().String(),
			Refusals: e.count, Error: e.err,
			First: time.Unix(0, e.first).In(now.Location()), Last: time.Unix(0, e.last).In(now.Location()),
		}
		if e.reset > e.first {
			r.Reset = time.Unix(0, e.reset).In(now.Location())
		}
		if e.until != 0 {
			r.Limit, r.Until = e.limit.String(), time.Unix(0, e.until).In(now.Location())
		}
		r.ResetPending = e.pending
		snap.Refused = append(snap.Refused, r)
	}
	return snap
}
