package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/ginlimit"
)

// TestQuickStartTrustsOnlyItsProxies checks the README's Gin quick start
// (newServer): Gin and the limiter agree on every caller, so W612 stays
// silent, and a forged X-Forwarded-For sent straight to the app is
// believed by neither. Before issue 18 the quick start used gin.Default()
// as it is, trusting every proxy, which W612 reports.
func TestQuickStartTrustsOnlyItsProxies(t *testing.T) {
	r, lim := newServer()
	assert.Empty(t, ginlimit.CheckClientIP(r, lim), "the quick start's engine and limiter agree")

	msgs := ginlimit.CheckClientIP(gin.Default(), lim)
	require.Len(t, msgs, 1, "gin.Default() alone trusts every proxy")
	assert.Equal(t, "ratescope.W612", msgs[0].ID)

	for _, tc := range []struct {
		name, peer, xff, want string
	}{
		{name: "forged, straight to the app", peer: "203.0.113.5:40000", xff: "198.51.100.1", want: "203.0.113.5"},
		{name: "through the proxy", peer: "10.1.2.3:40000", xff: "198.51.100.1, 192.0.2.9", want: "192.0.2.9"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		req.RemoteAddr, req.Header["X-Forwarded-For"] = tc.peer, []string{tc.xff}
		assert.Equal(t, tc.want, lim.Caller(req, core.Caller{}).String(), tc.name)
	}
}
