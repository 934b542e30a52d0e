package guards_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/internal/guards"
)

// countOnly is a store that cannot give units back.
type countOnly struct{ core.Store }

func TestErrorsNameTheAdapter(t *testing.T) {
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{Store: ms})
	require.NoError(t, err)
	plain, err := core.New(core.Config{Store: countOnly{ms}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no limiter", second(guards.Window("ginlimit", nil, core.GuardConfig{})), "ginlimit: no Limiter: build one with core.New"},
		{"unknown scope", second(guards.Window("echolimit", lim, core.GuardConfig{Scope: "nope"})), `echolimit: ratescope: unknown scope "nope"`},
		{"route cost", second(guards.Window("echo5limit", lim, core.GuardConfig{RouteCosts: map[string]int64{"/x": 0}})), `echo5limit: ratescope: cost 0 of route "/x"`},
		{"give-back", second(guards.Window("ginlimit", plain, core.GuardConfig{GiveBack: true})), "ginlimit: ratescope: the store cannot give units back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.err)
			assert.True(t, strings.HasPrefix(tc.err.Error(), tc.want), "%q", tc.err)
		})
	}
	_, err = guards.Window("ginlimit", plain, core.GuardConfig{GiveBack: true})
	assert.True(t, errors.Is(err, core.ErrNoGiveBack), "the adapter's error wraps the core's")
	g, err := guards.Window("ginlimit", lim, core.GuardConfig{RouteCosts: map[string]int64{"/export": 5}, GiveBack: true})
	require.NoError(t, err)
	var tk core.Ticket
	g.Check(context.Background(), &tk, core.Call{Caller: core.UserCaller("u"), Route: "/export", Header: http.Header{}})
	assert.Equal(t, int64(5), tk.Decision().Cost, "the route's cost")
}

func second[T any](_ T, err error) error { return err }
