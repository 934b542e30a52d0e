package guards_test

import (
	"context"
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

func TestErrorsNameTheAdapter(t *testing.T) {
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{Store: ms})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no limiter", second(guards.Window("ginlimit", nil, core.GuardConfig{})), "ginlimit: no Limiter: build one with core.New"},
		{"no limiter, balance", second(guards.Balance("wslimit", nil, "ws")), "wslimit: no Limiter: build one with core.New"},
		{"unknown scope", second(guards.Window("echolimit", lim, core.GuardConfig{Scope: "nope"})), `echolimit: ratescope: unknown scope "nope"`},
		{"route cost", second(guards.Window("echo5limit", lim, core.GuardConfig{RouteCosts: map[string]int64{"/x": 0}})), `echo5limit: ratescope: cost 0 of route "/x"`},
		{"unknown balance scope", second(guards.Balance("ginlimit", lim, "ledger")), `ginlimit: ratescope: unknown balance scope "ledger"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.err)
			assert.True(t, strings.HasPrefix(tc.err.Error(), tc.want), "%q", tc.err)
		})
	}
	g, err := guards.Window("ginlimit", lim, core.GuardConfig{RouteCosts: map[string]int64{"/export": 5}})
	require.NoError(t, err)
	var tk core.Ticket
	g.Check(context.Background(), &tk, core.Call{Caller: core.UserCaller("u"), Route: "/export", Header: http.Header{}})
	assert.Equal(t, int64(5), tk.Decision().Cost, "the route's cost")
}

func second[T any](_ T, err error) error { return err }
