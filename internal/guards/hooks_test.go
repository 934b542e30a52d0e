package guards_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/internal/guards"
)

// request is what a test's framework context stands for: the ids its
// hooks read.
type request struct{ key, user, plan string }

// TestHooks checks how every adapter reads a request: the key first and
// the user only without one, the plan of a signed-in caller only, and
// Exempt given the caller found.
func TestHooks(t *testing.T) {
	ms := memstore.New(memstore.Config{})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{Store: ms, Rates: map[string]string{"api.anon": "10/min", "api.user": "20/min"}, NumProxies: core.Proxies(0)})
	require.NoError(t, err)
	var userReads, planReads int
	var exempted core.Caller
	h := guards.Hooks[*request]{
		Limiter: lim,
		Key:     func(r *request) string { return r.key },
		User:    func(r *request) string { userReads++; return r.user },
		Plan:    func(r *request) string { planReads++; return r.plan },
		Exempt:  func(_ *request, c core.Caller) bool { exempted = c; return c == core.UserCaller("root") },
	}
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	header := http.Header{}

	call := h.Call(&request{key: "K", user: "ann", plan: "gold"}, r, "/api", header)
	assert.Equal(t, core.KeyCaller("K"), call.Caller)
	assert.Equal(t, 0, userReads, "the user is read only without a key")
	assert.Equal(t, 1, planReads, "a caller with a key is signed in: its plan is read")
	assert.Equal(t, "gold", call.Plan)
	assert.Equal(t, "/api", call.Route)
	assert.False(t, call.Exempt)
	assert.Equal(t, core.KeyCaller("K"), exempted, "Exempt is given the caller found")

	call = h.Call(&request{user: "root", plan: "gold"}, r, "/api", header)
	assert.Equal(t, core.UserCaller("root"), call.Caller)
	assert.Equal(t, 1, userReads)
	assert.True(t, call.Exempt)

	call = h.Call(&request{plan: "gold"}, r, "/api", header)
	assert.Equal(t, lim.AddrCaller(netip.MustParseAddr("192.0.2.1")), call.Caller)
	assert.Equal(t, "", call.Plan, "an anonymous caller has no plan")
	assert.Equal(t, 2, planReads, "nor is a plan read for it")
	assert.Equal(t, call.Caller, h.Caller(&request{plan: "gold"}, r), "Caller finds the caller Call does")

	bare := guards.Hooks[*request]{Limiter: lim}
	call = bare.Call(&request{key: "K", user: "ann", plan: "gold"}, r, "/api", header)
	assert.Equal(t, core.Call{Caller: call.Caller, Route: "/api", Header: header}, call, "nil hooks read nothing and exempt no one")
	assert.Equal(t, core.Anonymous, call.Caller.Kind())
}
