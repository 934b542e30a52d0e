package adapter_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/internal/adapter"
)

func newLimiter(t *testing.T) *core.Limiter {
	t.Helper()
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{Store: ms, Rates: map[string]string{"api.anon": "10/min", "api.user": "20/min"}, NumProxies: new(0)})
	require.NoError(t, err)
	return lim
}

func TestErrorsNameTheAdapter(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t)
	for _, tc := range []struct {
		name string
		cfg  adapter.Config[*http.Request]
		want string
	}{
		{name: "no limiter", cfg: adapter.Config[*http.Request]{Package: "ginlimit"}, want: "ginlimit: no Limiter: build one with core.New"},
		{name: "unknown scope", cfg: adapter.Config[*http.Request]{Package: "echolimit", Limiter: lim, Scope: "nope"}, want: `echolimit: ratescope: unknown scope "nope"`},
		{name: "route cost", cfg: adapter.Config[*http.Request]{Package: "echo5limit", Limiter: lim, RouteCosts: map[string]int64{"/x": 0}}, want: `echo5limit: ratescope: cost 0 of route "/x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := adapter.New(tc.cfg)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%q", err)
			assert.Equal(t, err, tc.cfg.Validate(), "Validate reports what New fails on")
		})
	}
	_, err := adapter.New(adapter.Config[*http.Request]{Package: "echolimit", Limiter: lim, Scope: "nope"})
	assert.True(t, errors.Is(err, core.ErrUnknownScope), "the adapter's error wraps the core's")
}

type request struct{ key, user, plan string }

// The caller is found in one order: a key, else a user, else the address;
// the user is read only without a key, the plan only for a signed-in
// caller, and the exemption hook is given the caller found.
func TestCheck(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t)
	var userReads, planReads int
	var exempted core.Caller
	m, err := adapter.New(adapter.Config[*request]{
		Package:    "test",
		Limiter:    lim,
		RouteCosts: map[string]int64{"/export": 5},
		Key:        func(r *request) string { return r.key },
		User:       func(r *request) string { userReads++; return r.user },
		Plan:       func(r *request) string { planReads++; return r.plan },
		Exempt:     func(_ *request, c core.Caller) bool { exempted = c; return c == core.UserCaller("root") },
	})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	check := func(req *request, route string) *core.Decision {
		var t core.Ticket
		m.Check(req, r, route, http.Header{}, &t)
		return t.Decision()
	}

	d := check(&request{key: "K", user: "ann", plan: "gold"}, "/api")
	assert.Equal(t, core.KeyCaller("K"), d.Caller)
	assert.Equal(t, 0, userReads, "the user is read only without a key")
	assert.Equal(t, 1, planReads, "a caller with a key is signed in: its plan is read")
	assert.Equal(t, core.KeyCaller("K"), exempted, "Exempt is given the caller found")

	d = check(&request{user: "root"}, "/api")
	assert.Equal(t, core.OutcomeExempt, d.Outcome)
	assert.Equal(t, 1, userReads)
	assert.Equal(t, 2, planReads)

	d = check(&request{plan: "gold"}, "/export")
	assert.Equal(t, lim.AddrCaller(netip.MustParseAddr("192.0.2.1")), d.Caller)
	assert.Equal(t, 2, planReads, "no plan is read for an anonymous caller")
	assert.Equal(t, int64(5), d.Cost, "the route's cost")

	bare, err := adapter.New(adapter.Config[*request]{Package: "test", Limiter: lim})
	require.NoError(t, err)
	var tk core.Ticket
	bare.Check(&request{key: "K", user: "ann"}, r, "/api", http.Header{}, &tk)
	assert.Equal(t, core.Anonymous, tk.Decision().Caller.Kind(), "nil hooks read nothing")
	assert.Equal(t, core.OutcomeAllowed, tk.Decision().Outcome, "and exempt no one")
}
