package ginlimit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
)

// A GiveBack on a store that cannot give units back fails at New.
func TestGiveBackNeedsAGiveBackStore(t *testing.T) {
	t.Parallel()
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{Store: struct{ core.Store }{ms}})
	require.NoError(t, err)
	cfg := ginlimit.Config{Limiter: lim, GiveBack: ginlimit.GiveBackSuccess}
	h, err := ginlimit.New(cfg)
	assert.Nil(t, h)
	require.ErrorIs(t, err, core.ErrNoGiveBack)
	assert.Equal(t, err, cfg.Validate())
}
