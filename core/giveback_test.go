package core_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// flakyGiver is a memstore whose GiveBack fails while fail is set.
type flakyGiver struct {
	*memstore.Store
	fail  bool
	calls int
}

func (f *flakyGiver) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	c, err := f.Store.Bind(scope, kind, limits)
	return flakyCounter{c, f}, err
}

type flakyCounter struct {
	core.Counter
	f *flakyGiver
}

func (c flakyCounter) GiveBack(ctx context.Context, key core.Key, cost int64, at int64) error {
	c.f.calls++
	if c.f.fail {
		return errors.New("connection refused")
	}
	return c.Counter.GiveBack(ctx, key, cost, at)
}

// failingGiver fails every Take; its GiveBack must not be called.
type failingGiver struct{}

func (failingGiver) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	c, err := failingStore{}.Bind("", 0, nil)
	return failingGiverCounter{c}, err
}

type failingGiverCounter struct{ core.Counter }

func (failingGiverCounter) GiveBack(context.Context, core.Key, int64, int64) error {
	panic("GiveBack of a decision that failed open")
}

// check decides a request by caller with g, as a middleware does.
func check(g *core.Guard, caller core.Caller) *core.Ticket {
	t := new(core.Ticket)
	g.Check(context.Background(), t, core.Call{Caller: caller})
	return t
}

func newGuard(t *testing.T, lim *core.Limiter, cfg core.GuardConfig) *core.Guard {
	t.Helper()
	cfg.Limiter = lim
	g, err := core.NewGuard(cfg)
	require.NoError(t, err)
	return g
}

func TestGiveBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "3/min,10/day"}})
	g := newGuard(t, lim, core.GuardConfig{Cost: 2})

	tk := check(g, ip)
	require.True(t, tk.Counted())
	require.NoError(t, tk.GiveBack(ctx))
	assert.False(t, tk.Counted(), "given back")
	require.NoError(t, tk.GiveBack(ctx), "a second give-back of one request")

	one := newGuard(t, lim, core.GuardConfig{})
	for i := range 3 {
		require.True(t, check(one, ip).Allowed(), "request %d: the 2 units given back are free, once", i+1)
	}
	refused := check(one, ip)
	assert.Equal(t, core.OutcomeDenied, refused.Decision().Outcome, "the second give-back freed nothing")
	assert.False(t, refused.Counted(), "a refused request has nothing to give back")
	require.NoError(t, refused.GiveBack(ctx))
	require.NoError(t, lim.GiveBack(ctx, refused.Decision()))
	assert.False(t, check(one, ip).Allowed())
	var zero core.Decision
	require.NoError(t, lim.GiveBack(ctx, &zero))
	var none core.Ticket
	require.NoError(t, none.GiveBack(ctx), "a Ticket that decided nothing")
}

// TestGiveBackOnceWhateverCopies is the second defect of issue 30: a
// middleware that keeps the decision for the handlers and gives the
// request back itself, and a handler that gives back the kept decision (or
// a copy of it), free the request's units once between them; and a
// decision's exported fields cannot make a give-back free more than was
// counted, or another caller's units.
func TestGiveBackOnceWhateverCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip, other := anonCaller("192.0.2.1"), anonCaller("192.0.2.2")
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "3/min,10/day"}})
	g := newGuard(t, lim, core.GuardConfig{})
	for range 3 {
		require.True(t, check(g, other).Allowed())
	}
	for range 2 {
		require.True(t, check(g, ip).Allowed())
	}
	tk := check(g, ip) // the third of 3
	require.True(t, tk.Allowed())
	kept := tk.Decision()
	assert.Same(t, kept, tk.Decision(), "one decision on the heap")
	copied := *kept
	copied.Cost, copied.Caller, copied.Scope = 3, other, "login"
	require.NoError(t, lim.GiveBack(ctx, &copied), "the handler gives back a copy, with its fields changed")
	require.NoError(t, lim.GiveBack(ctx, kept), "the handler gives back the kept decision")
	require.NoError(t, tk.GiveBack(ctx), "the middleware gives back its ticket")
	assert.True(t, check(g, ip).Allowed(), "the one unit given back")
	assert.False(t, check(g, ip).Allowed(), "given back once: 3 of 3 used again")
	assert.False(t, check(g, other).Allowed(), "the other caller got nothing back")
}

func TestGiveBackOfAllowN(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "3/min,10/day"}})
	d, err := lim.Allow(context.Background(), "api", anonCaller("192.0.2.1"))
	require.NoError(t, err)
	assert.ErrorContains(t, lim.GiveBack(context.Background(), &d), "only a decision of a Guard")
}

func TestGiveBackDoesNothingUncounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	for _, tc := range []struct {
		name    string
		cfg     core.Config
		exempt  bool
		outcome core.Outcome
	}{
		{name: "failed open", cfg: core.Config{Store: failingGiver{}}, outcome: core.OutcomeFailedOpen},
		{name: "shadow", cfg: core.Config{Scopes: shadowAPI()}, outcome: core.OutcomeShadow},
		{name: "exempt", exempt: true, outcome: core.OutcomeExempt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Logger = slog.New(slog.DiscardHandler)
			tc.cfg.Rates = map[string]string{"api.anon": "1/min"}
			lim := newLimiter(t, tc.cfg)
			g := newGuard(t, lim, core.GuardConfig{})
			if tc.outcome == core.OutcomeShadow {
				check(g, ip)
			}
			var tk core.Ticket
			g.Check(ctx, &tk, core.Call{Caller: ip, Exempt: tc.exempt})
			require.Equal(t, tc.outcome, tk.Decision().Outcome)
			assert.False(t, tk.Counted())
			require.NoError(t, tk.GiveBack(ctx))
			require.NoError(t, lim.GiveBack(ctx, tk.Decision()))
		})
	}
}

func TestGiveBackStoreFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	store := &flakyGiver{Store: memstore.New(memstore.Config{SweepInterval: -1}), fail: true}
	lim := newLimiter(t, core.Config{Store: store, Logger: slog.New(slog.DiscardHandler), Rates: map[string]string{"api.anon": "1/min"}})
	g := newGuard(t, lim, core.GuardConfig{})
	tk := check(g, ip)
	require.True(t, tk.Allowed())
	assert.Error(t, tk.GiveBack(ctx))
	assert.False(t, check(g, ip).Allowed(), "units the store failed to give back stay counted")
	assert.Equal(t, 1, store.calls)
	require.NoError(t, tk.GiveBack(ctx), "no second try")
	assert.Equal(t, 1, store.calls)
}

// ctxGiver is a memory store whose give-back fails once its context has
// ended, as a store that sends it over the network does.
type ctxGiver struct{ *memstore.Store }

func (s ctxGiver) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	c, err := s.Store.Bind(scope, kind, limits)
	return ctxCounter{c}, err
}

type ctxCounter struct{ core.Counter }

func (c ctxCounter) GiveBack(ctx context.Context, key core.Key, cost int64, at int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.Counter.GiveBack(ctx, key, cost, at)
}

// TestGiveBackOutlivesTheRequest: a client that hung up once its request
// was handled made the attempt; its give-back is not cut short, so that no
// adapter has to detach the request's context itself.
func TestGiveBackOutlivesTheRequest(t *testing.T) {
	t.Parallel()
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim := newLimiter(t, core.Config{Store: ctxGiver{ms}, Rates: map[string]string{"api.anon": "1/min,10/day"}})
	ip := anonCaller("192.0.2.1")
	ctx, cancel := context.WithCancel(context.Background())
	var tk core.Ticket
	newGuard(t, lim, core.GuardConfig{}).Check(ctx, &tk, core.Call{Caller: ip})
	require.True(t, tk.Allowed())
	cancel()
	require.NoError(t, tk.GiveBack(ctx), "a give-back after the client hung up")
	again, err := lim.Allow(context.Background(), "api", ip)
	require.NoError(t, err)
	assert.True(t, again.Allowed, "the unit was given back")
}

// TestTicketUsedAgain checks that Check clears a Ticket it filled before
// (issue 27: a new Ticket is not cleared, and the give-back record is read
// from the decision when first needed): each request on the reused Ticket
// is given back once, by its own caller, whatever the request before it
// did.
func TestTicketUsedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip, other := anonCaller("192.0.2.1"), anonCaller("192.0.2.2")
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "2/min,10/day"}})
	g := newGuard(t, lim, core.GuardConfig{})

	var tk core.Ticket
	g.Check(ctx, &tk, core.Call{Caller: ip})
	require.True(t, tk.Counted())
	_ = tk.Decision() // kept on the heap, with its own give-back
	require.NoError(t, tk.GiveBack(ctx))
	assert.False(t, tk.Counted(), "given back")

	g.Check(ctx, &tk, core.Call{Caller: other})
	assert.Equal(t, other, tk.Decision().Caller, "the new request's decision, not the kept one")
	require.True(t, tk.Counted(), "the new request holds its unit: the mark of the one before is gone")
	require.NoError(t, tk.GiveBack(ctx))

	g.Check(ctx, &tk, core.Call{Caller: other})
	require.True(t, tk.Counted())
	g.Check(ctx, &tk, core.Call{Caller: other})
	require.True(t, tk.Counted(), "the unit given back above is free again: 2 of 2 used")
	g.Check(ctx, &tk, core.Call{Caller: other})
	assert.False(t, tk.Allowed())
	assert.False(t, tk.Counted(), "a refusal on a used Ticket has nothing to give back")
	require.NoError(t, tk.GiveBack(ctx))
	assert.False(t, check(g, other).Allowed(), "the refusal gave nothing back")

	for range 2 {
		assert.True(t, check(g, ip).Allowed(), "the first caller's unit was given back, once")
	}
	assert.False(t, check(g, ip).Allowed())
}

// TestGiveBackWithAWidePlan: a base-plan caller of a scope whose plan has
// a limit of wide counters is counted in the plan's table, and its
// requests given back are freed there.
func TestGiveBackWithAWidePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{
		"api.anon": "3/min", "api.user": "3/min", "api.user@gold": "100000/min",
	}})
	g := newGuard(t, lim, core.GuardConfig{})
	ann := core.UserCaller("ann")
	for i := range 10 {
		tk := check(g, ann)
		require.True(t, tk.Allowed(), "request %d: every one before it was given back", i+1)
		require.NoError(t, tk.GiveBack(ctx))
	}
}
