package liveview_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/liveview"
)

// ledgerResetter resets the balance scope "ledger" through its guard and
// every other scope through the limiter, as an application with balance
// scopes gives the view.
type ledgerResetter struct {
	lim    *core.Limiter
	ledger *balance.Guard
}

func (r ledgerResetter) Reset(ctx context.Context, scope string, caller core.Caller) error {
	if scope == "ledger" {
		return r.ledger.Reset(ctx, caller)
	}
	return r.lim.Reset(ctx, scope, caller)
}

// TestResetOfABalance checks that a caller dropped in a balance scope is
// listed, and that its reset button resets its balance through the
// Resetter the application gave.
func TestResetOfABalance(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, nil)
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	policy := balance.DefaultConfig().Policy
	policy.Warn, policy.Drop = 100, 150
	ledger, err := balance.New(balance.Config{Limiter: s.lim, Store: store, Scope: "ledger", Policy: policy})
	require.NoError(t, err)
	ctx := context.Background()
	ip := s.addr("203.0.113.7")
	require.True(t, ledger.Charge(ctx, ip, 32*150).Allowed, "at the drop threshold")
	require.False(t, ledger.Charge(ctx, ip, 20).Allowed, "dropped")
	snap := s.view.Snapshot()
	require.Len(t, snap.Refused, 1)
	assert.Equal(t, "ledger", snap.Refused[0].Scope)
	assert.Empty(t, snap.Refused[0].Limit, "a balance's refusal names no window limit")
	assert.Zero(t, snap.Refused[0].Until)
	assert.NotContains(t, get(t, s.view, "/?format=json").Body.String(), `"limit"`, "left out of the JSON")

	tok := token(t, s.view)
	s.view.AllowReset(s.lim)
	w := post(s.view, tok, "same-origin", "ledger", refOf(t, ip))
	assert.Equal(t, http.StatusNotFound, w.Code, "the limiter alone knows no balance scope: %s", w.Body)

	s.view.AllowReset(ledgerResetter{lim: s.lim, ledger: ledger})
	s.clock.Advance(time.Second)
	w = post(s.view, tok, "same-origin", "ledger", refOf(t, ip))
	require.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
	d := ledger.Charge(ctx, ip, 20)
	assert.True(t, d.Allowed, "served again")
	assert.Zero(t, d.Balance)
	assert.Equal(t, s.clock.Now(), s.view.Snapshot().Refused[0].Reset)

	var none *core.Limiter
	s.view.AllowReset(none)
	assert.False(t, s.view.Snapshot().ResetAllowed, "a nil limiter disables the buttons")
}
