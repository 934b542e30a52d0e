package portal_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

func TestAdminTokenFlag(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	o, err := portal.ParseFlags(nil, getenv, io.Discard)
	require.NoError(t, err)
	assert.Empty(t, o.AdminToken)
	o, err = portal.ParseFlags([]string{"-admin-token", "s3cret"}, getenv, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", o.AdminToken)
}

// TestResetLimits checks the order of ResetLimits' checks: the token
// first, so that a caller without it learns nothing of the scopes or the
// query, then the query, then the scope.
func TestResetLimits(t *testing.T) {
	t.Parallel()
	newApp := func(token string) *portal.App {
		a, err := portal.New(portal.Options{AdminToken: token, NumProxies: new(0), Rates: core.RateTable{"api.user": "1/min,100/day"}}, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	a := newApp("s3cret")
	require.True(t, a.Admin())
	assert.False(t, newApp("").Admin())

	caller := core.UserCaller("alice")
	use := func() bool {
		d, err := a.Limiter.Allow(context.Background(), portal.ScopeAPI, caller)
		require.NoError(t, err)
		return d.Allowed
	}
	require.True(t, use())
	for _, tc := range []struct {
		name   string
		scope  string
		query  string
		token  string
		status int
	}{
		{name: "no token, unknown scope, bad query", scope: "nope", query: "who=x", status: http.StatusForbidden},
		{name: "wrong token", scope: "api", query: "user=alice", token: "s3cre", status: http.StatusForbidden},
		{name: "longer token", scope: "api", query: "user=alice", token: "s3cret\x00", status: http.StatusForbidden},
		{name: "bad query before unknown scope", scope: "nope", query: "user=", token: "s3cret", status: http.StatusBadRequest},
		{name: "unknown scope", scope: "nope", query: "user=alice", token: "s3cret", status: http.StatusNotFound},
		{name: "reset", scope: "api", query: "user=alice", token: "s3cret", status: http.StatusNoContent},
	} {
		require.False(t, use(), "%s: alice is blocked before", tc.name)
		r := httptest.NewRequest(http.MethodDelete, portal.AdminLimitsRoute+tc.scope+"?"+tc.query, nil)
		if tc.token != "" {
			r.Header.Set(portal.AdminTokenHeader, tc.token)
		}
		w := httptest.NewRecorder()
		a.ResetLimits(w, r, tc.scope)
		assert.Equal(t, tc.status, w.Code, tc.name)
		if tc.status != http.StatusNoContent {
			assert.Contains(t, w.Body.String(), `"error":`, tc.name)
			continue
		}
		assert.True(t, use(), "alice is served after the reset")
	}

	// An App without a token refuses whatever it is sent, should a
	// framework mount the route all the same.
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodDelete, portal.AdminLimitsRoute+"api?user=alice", nil)
	r.Header.Set(portal.AdminTokenHeader, "")
	newApp("").ResetLimits(w, r, "api")
	assert.Equal(t, http.StatusForbidden, w.Code)
}
