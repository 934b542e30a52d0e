package adaptertest

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// PlanHeader is the request header that carries the signed-in caller's
// plan when [Options.Plan] is true.
const PlanHeader = "X-Plan"

// The RateLimit-Policy value of the plan gold of testPlans.
const goldPolicy = `"api.user.min";q=8;w=60, "api.user.day";q=100000;w=86400`

// testPlans: a signed-in caller on a plan gets the plan's limits and
// RateLimit-Policy, counted on its one count whatever the plan, so that
// changing plan keeps the count; an unknown plan gets the scope's user
// rates; an anonymous caller the anonymous rates whatever it sends.
func testPlans(t *testing.T, build builder) {
	a := newAppWith(t, build, nil, func(c *core.Config) {
		c.Rates["api.user@gold"] = "8/min,100000/day" // wide counters for the day
	}, Options{User: UserFromHeader, Plan: true})
	alice := map[string]string{UserHeader: "alice"}
	gold := map[string]string{UserHeader: "alice", PlanHeader: "gold"}

	for i := range 5 {
		w := a.get("192.0.2.1:1234", alice)
		require.Equal(t, http.StatusOK, w.Code, "request %d of api.user's 5/min", i+1)
		assert.Equal(t, userPolicy, w.Header().Get("RateLimit-Policy"))
		assert.Empty(t, a.last().Plan())
	}
	require.Equal(t, http.StatusTooManyRequests, a.get("192.0.2.1:1234", alice).Code, "over api.user's 5/min")

	for i := range 3 {
		w := a.get("192.0.2.1:1234", gold)
		require.Equal(t, http.StatusOK, w.Code, "request %d on gold, after 5 on api.user", i+1)
		assert.Equal(t, goldPolicy, w.Header().Get("RateLimit-Policy"))
		assert.Regexp(t, `"api.user.min";r=`+strconv.Itoa(2-i)+"(,|$)", w.Header().Get("RateLimit"), "the count kept from api.user")
		assert.Equal(t, "gold", a.last().Plan())
	}
	w := a.get("192.0.2.1:1234", gold)
	require.Equal(t, http.StatusTooManyRequests, w.Code, "over gold's 8/min")
	assert.Equal(t, goldPolicy, w.Header().Get("RateLimit-Policy"))
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	require.Equal(t, http.StatusTooManyRequests, a.get("192.0.2.1:1234", alice).Code, "back on api.user, the 8 requests count")

	// An unknown plan: the scope's user rates, the caller served.
	w = a.get("192.0.2.1:1234", map[string]string{UserHeader: "bob", PlanHeader: "platinum"})
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, userPolicy, w.Header().Get("RateLimit-Policy"))
	assert.Empty(t, a.last().Plan())

	// An anonymous caller has no plan.
	w = a.get("192.0.2.2:1234", map[string]string{PlanHeader: "gold"})
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, anonPolicy, w.Header().Get("RateLimit-Policy"))
}
