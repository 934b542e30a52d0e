package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
)

func TestFailModeText(t *testing.T) {
	t.Parallel()
	for _, m := range []core.FailMode{core.FailOpen, core.FailClosed, core.FailLocal} {
		text, err := m.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, m.String(), string(text))
		var back core.FailMode
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, m, back)
	}
	assert.Equal(t, "local", core.FailLocal.String())
	var m core.FailMode
	assert.EqualError(t, m.UnmarshalText([]byte("shut")), `fail mode "shut": want open, closed or local`)
	_, err := core.FailMode(7).MarshalText()
	assert.Error(t, err)
}

func TestFailModeConfigErrors(t *testing.T) {
	t.Parallel()
	local := core.Scope{Name: "api", Anon: []core.Rate{core.PerMinute(3)}, User: []core.Rate{core.PerMinute(30)}, FailMode: core.FailLocal}
	for _, tt := range []struct {
		name string
		cfg  core.Config
		want string
	}{
		{name: "negative processes", cfg: core.Config{Processes: -1}, want: "ratescope.E003: Processes -1: want 1 or more (0 for 1)"},
		{name: "limit below processes", cfg: core.Config{Scopes: []core.Scope{local}, Processes: 4},
			want: `ratescope.E003: scope "api" fails local: api.anon 3/min divided among Processes 4 leaves a process nothing; lower Processes or raise the limit`},
		{name: "not a mode", cfg: core.Config{Scopes: []core.Scope{{Name: "api", Anon: local.Anon, User: local.User, FailMode: 9}}},
			want: `ratescope.E004: scope "api": fail mode 9: want FailOpen, FailClosed or FailLocal`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Store = failingStore{}
			err := tt.cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var ce *core.ConfigError
			assert.True(t, errors.As(err, &ce))
		})
	}
	cfg := core.Config{Store: failingStore{}, Scopes: []core.Scope{local}, Processes: 3}
	assert.NoError(t, cfg.Validate(), "3/min among 3 processes: 1 each")
}

// TestFailLocalDividesByProcesses checks a scope that fails local on a
// store that is down: each caller gets the limit divided by
// Config.Processes, in memory, with outcome local and the RateLimit
// figures of that share; a scope that fails open serves uncounted.
func TestFailLocalDividesByProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start)
	lim := newLimiter(t, core.Config{
		Store: failingStore{},
		Scopes: []core.Scope{
			{Name: "api", Anon: []core.Rate{core.PerMinute(10)}, User: []core.Rate{core.PerMinute(10)}, FailMode: core.FailLocal},
			{Name: "open", Anon: []core.Rate{core.PerMinute(1)}, User: []core.Rate{core.PerMinute(1)}},
		},
		Processes: 3,
		Now:       clock.Now,
	})
	caller := core.UserCaller("alice")
	var served []bool
	for range 4 {
		d, err := lim.Allow(ctx, "api", caller)
		require.NoError(t, err)
		assert.Equal(t, core.OutcomeLocal, d.Outcome)
		assert.Error(t, d.StoreErr)
		served = append(served, d.Allowed)
	}
	assert.Equal(t, []bool{true, true, true, false}, served, "10/min among 3 processes: 3 each")
	d, err := lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.Equal(t, 429, d.Status())
	assert.Equal(t, time.Minute, d.RetryAfter, "until the window of the requests counted in memory ends")
	clock.Advance(time.Minute)
	d, err = lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "a new window")
	assert.Equal(t, int64(2), d.Limits()[0].Remaining)

	for range 3 {
		d, err = lim.Allow(ctx, "open", caller)
		require.NoError(t, err)
		assert.Equal(t, core.OutcomeFailedOpen, d.Outcome, "the default: served uncounted")
	}
	assert.Equal(t, int64(9), lim.StoreFailures())
}
