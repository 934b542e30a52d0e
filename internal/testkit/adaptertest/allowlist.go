package adaptertest

import (
	"mime"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// This file holds the subtests of the allowlists (Config.ExemptNetworks,
// Config.ExemptUsers), failing closed and the problem details deny
// handler: the core decides the first two, so an adapter passes them with
// no code of its own.

// office is the exempt network of the allowlist subtests.
var office = core.Networks{netip.MustParsePrefix("198.51.100.0/24")}

func testExemptNetworks(t *testing.T, build builder) {
	var ev events
	a := newAppWith(t, build, nil, func(c *core.Config) {
		c.ExemptNetworks = office
		c.ExemptUsers = []string{"monitor"}
		c.Observe = ev.observe
	}, Options{User: UserFromHeader})

	for _, tc := range []struct {
		name       string
		remoteAddr string
		header     map[string]string
	}{
		{name: "anonymous in the office", remoteAddr: "10.0.0.1:1234", header: map[string]string{"X-Forwarded-For": "198.51.100.7"}},
		{name: "signed in from the office", remoteAddr: "10.0.0.1:1234", header: map[string]string{"X-Forwarded-For": "198.51.100.8", UserHeader: "alice"}},
		{name: "behind the proxy, from the office", remoteAddr: "10.0.0.1:1234", header: map[string]string{"X-Forwarded-For": "198.51.100.9"}},
		{name: "an exempt user from anywhere", remoteAddr: "192.0.2.1:1234", header: user("monitor")},
	} {
		for i := range 10 {
			w := a.get(tc.remoteAddr, tc.header)
			require.Equal(t, http.StatusOK, w.Code, "%s: request %d is never refused", tc.name, i+1)
			assert.Empty(t, w.Header().Get("Ratelimit"), "%s: no RateLimit headers", tc.name)
			assert.Empty(t, w.Header().Get("Ratelimit-Policy"), tc.name)
			d := a.last()
			assert.Equal(t, core.OutcomeExempt, d.Outcome, tc.name)
			assert.False(t, d.Checked, "%s: not counted", tc.name)
		}
	}
	assert.Len(t, ev.list(), 40, "every exempt decision is observed")
	for _, o := range ev.outcomes() {
		assert.Equal(t, core.OutcomeExempt, o)
	}

	// Others are limited as before, and a forged X-Forwarded-For entry
	// does not put a caller in the office.
	forged := map[string]string{"X-Forwarded-For": "198.51.100.9, 203.0.113.7"}
	for range 3 {
		require.Equal(t, http.StatusOK, a.get("10.0.0.1:1234", forged).Code)
	}
	assert.Equal(t, http.StatusTooManyRequests, a.get("10.0.0.1:1234", forged).Code)
	assert.Equal(t, "203.0.113.7", a.last().Caller.String())
	for range 5 {
		require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", user("alice")).Code)
	}
	assert.Equal(t, http.StatusTooManyRequests, a.get("192.0.2.1:1234", user("alice")).Code, "a user out of the office is limited")

	// A request without the proxy's entry (a client that bypassed the
	// proxy) is counted by its peer address; even in the office network,
	// that address was not read as configured, so it is never exempt.
	for i := range 3 {
		require.Equal(t, http.StatusOK, a.get("198.51.100.20:1234", nil).Code, "request %d", i+1)
		assert.Equal(t, core.OutcomeAllowed, a.last().Outcome)
	}
	assert.Equal(t, http.StatusTooManyRequests, a.get("198.51.100.20:1234", nil).Code, "a short X-Forwarded-For never makes a caller exempt")
}

func testFailClosed(t *testing.T, build builder) {
	failClosed := func(c *core.Config) {
		c.Scopes = apiScopes(c.Scopes, func(s *core.Scope) { s.FailMode = core.FailClosed })
	}
	a := newAppWith(t, build, failingStore{}, failClosed, Options{User: UserFromHeader})
	for i := range 3 {
		w := a.get("192.0.2.1:1234", nil)
		require.Equal(t, http.StatusServiceUnavailable, w.Code, "request %d", i+1)
		assert.Equal(t, "1", w.Header().Get("Retry-After"), "the default: the store's error does not say")
		assert.Empty(t, w.Header().Get("Ratelimit"), "nothing was counted")
		assert.Equal(t, "application/json", mediaType(t, w.Header().Get("Content-Type")))
		assert.JSONEq(t, `{"detail":"Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.","retry_after":1}`, w.Body.String())
	}
	assert.Zero(t, a.served(), "the handler never runs")

	var denied []*core.Decision
	c := newAppWith(t, build, failingStore{}, failClosed, Options{Deny: func(d *core.Decision) string {
		denied = append(denied, d)
		return d.Outcome.String()
	}})
	w := c.get("192.0.2.1:1234", nil)
	assert.Equal(t, "failed_closed", w.Body.String(), "a custom deny handler tells by the outcome")
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	require.Len(t, denied, 1)
	assert.ErrorIs(t, denied[0].StoreErr, errDown)
	assert.Zero(t, c.served())
}

func testDenyProblem(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{Problem: true})
	for range 3 {
		require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", nil).Code)
	}
	w := a.get("192.0.2.1:1234", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, core.ProblemContentType, w.Header().Get("Content-Type"))
	retry := w.Header().Get("Retry-After")
	assert.Equal(t, "60", retry)
	assert.JSONEq(t, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,
		"detail":"Request was throttled. Expected available in `+retry+` seconds.","retry_after":`+retry+`,"violated-policies":["api.anon.min"]}`, w.Body.String())
	assert.Contains(t, w.Header().Get("Ratelimit"), `"api.anon.min";r=0;t=`)
	assert.Equal(t, 3, a.served())

	f := newAppWith(t, build, failingStore{}, func(c *core.Config) {
		c.Scopes = apiScopes(c.Scopes, func(s *core.Scope) { s.FailMode = core.FailClosed })
	}, Options{Problem: true})
	w = f.get("192.0.2.1:1234", nil)
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, core.ProblemContentType, w.Header().Get("Content-Type"))
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.JSONEq(t, `{"type":"about:blank","title":"Service Unavailable","status":503,
		"detail":"Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.","retry_after":1}`, w.Body.String())
	assert.Zero(t, f.served())
}

// mediaType returns the media type of a Content-Type value, without its
// parameters.
func mediaType(t *testing.T, contentType string) string {
	t.Helper()
	mt, _, err := mime.ParseMediaType(contentType)
	require.NoError(t, err, "Content-Type %q", contentType)
	return mt
}
