package main_test

import (
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

// TestFrameworkParity sends the same requests, at the same times, to the
// portal on Gin, Echo v4 and Echo v5, each with counts of its own, and checks that
// the answers are the same: status, rate limit headers and JSON body (byte
// for byte), for the API and for the search boxes. TestOperatorParity and
// TestHeaderPolicyParity do the same for the operators' routes and flags.
func TestFrameworkParity(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	handlers := parityHandlers(t, portal.Options{
		Rates: map[string]string{
			"api.anon": "3/min,100/day", "api.user": "4/min,1000/day",
			"autocomplete.project.anon": "2/min,100/day", "autocomplete.project.user": "1/min,100/day",
		},
		NumProxies: new(1),
		Admins:     []string{"root"},
		Now:        clock.Now,
	})

	type step struct {
		path    string
		xff     string // X-Forwarded-For, the proxy at 10.0.0.1 being the peer
		user    string
		advance time.Duration // clock move before the request
		status  int
		body    string // the JSON body expected, if not ""
	}
	steps := []step{
		{path: "/api/records", xff: "192.0.2.1", status: http.StatusOK},
		{path: "/api/records", xff: "198.51.100.1, 192.0.2.1", status: http.StatusOK},
		{path: "/api/records", xff: "198.51.100.2, 192.0.2.1", advance: 10 * time.Second, status: http.StatusOK},
		{path: "/api/records", xff: "198.51.100.3, 192.0.2.1", status: http.StatusTooManyRequests},
		{path: "/api/records", xff: "192.0.2.1", advance: 20 * time.Second, status: http.StatusTooManyRequests},
		{path: "/api/whoami", xff: "198.51.100.3, 192.0.2.1", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.2", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.1", user: "alice", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.7", user: "alice", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.8", user: "alice", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.9", user: "alice", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.1", user: "alice", status: http.StatusTooManyRequests},
		{path: "/api/whoami", xff: "192.0.2.1", user: "alice", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.1", user: "root", status: http.StatusOK},
		{path: "/healthz", xff: "192.0.2.1", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.1", advance: 2 * time.Minute, status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.1", user: "alice", status: http.StatusOK},
		// The search boxes, counted apart from the API and each other.
		{path: "/autocomplete/project?q=glacier", xff: "192.0.2.1", status: http.StatusOK,
			body: `{"results":[{"id":"project-04","label":"Alpine glacier mass balance"}]}`},
		{path: "/autocomplete/project", xff: "198.51.100.9, 192.0.2.1", status: http.StatusOK},
		{path: "/autocomplete/project?q=soil", xff: "192.0.2.1", status: http.StatusTooManyRequests, body: `{"results":[]}`},
		{path: "/autocomplete/dataset?q=zebra", xff: "192.0.2.1", status: http.StatusOK, body: `{"results":[]}`},
		{path: "/autocomplete/person?q=EMIL", xff: "192.0.2.1", status: http.StatusOK,
			body: `{"results":[{"id":"person-05","label":"Emil Varga"}]}`},
		{path: "/api/records", xff: "192.0.2.1", status: http.StatusOK},
		{path: "/autocomplete/project?q=soil", xff: "192.0.2.1", user: "alice", status: http.StatusOK},
		{path: "/autocomplete/project?q=soil", xff: "192.0.2.1", user: "alice", status: http.StatusTooManyRequests, body: `{"results":[]}`},
		{path: "/autocomplete/project?q=soil", xff: "192.0.2.1", user: "root", status: http.StatusOK},
		{path: "/autocomplete/projekt?q=soil", xff: "192.0.2.1", status: http.StatusNotFound},
		{path: "/autocomplete/project", xff: "192.0.2.1", advance: 10 * time.Second, status: http.StatusTooManyRequests, body: `{"results":[]}`},
		{path: "/debug/searches", xff: "192.0.2.1", status: http.StatusOK,
			body: `{"project":4,"dataset":1,"sample":0,"measurement":0,"person":1,"organization":0,"publication":0,"tag":0,"ror":0}`},
		{path: "/autocomplete/project", xff: "192.0.2.1", advance: 2 * time.Minute, status: http.StatusOK},
		// /api/export costs 5 in the same decision, clamped to the limit
		// of 3 for anonymous callers, 4 for users.
		{path: "/api/export", xff: "192.0.2.20", status: http.StatusOK},
		{path: "/api/records", xff: "192.0.2.20", status: http.StatusTooManyRequests},
		{path: "/api/export", xff: "192.0.2.20", user: "bob", status: http.StatusOK},
		{path: "/api/export", xff: "192.0.2.20", user: "bob", status: http.StatusTooManyRequests},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		answers := make([]*http.Response, len(handlers))
		for j, h := range handlers {
			req := httptest.NewRequest(http.MethodGet, s.path, nil)
			req.RemoteAddr = "10.0.0.1:40000"
			req.Header.Set("X-Forwarded-For", s.xff)
			if s.user != "" {
				req.Header.Set("Authorization", "Bearer "+s.user)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			answers[j] = w.Result()
		}
		g := answers[0]
		gBody, err := io.ReadAll(g.Body)
		require.NoError(t, err)
		assert.Equal(t, s.status, g.StatusCode, "step %d %+v: gin status", i, s)
		counted := strings.HasPrefix(s.path, "/api/records") || strings.HasPrefix(s.path, "/api/export") || strings.HasPrefix(s.path, "/autocomplete/")
		if counted && s.user != "root" && s.status != http.StatusNotFound {
			assert.NotEmpty(t, g.Header.Get("Ratelimit"), "step %d", i)
		}
		if s.status == http.StatusTooManyRequests {
			assert.NotEmpty(t, g.Header.Get("Retry-After"), "step %d", i)
		}
		gType, _, _ := mime.ParseMediaType(g.Header.Get("Content-Type"))
		for k, e := range answers[1:] {
			fw := frameworks[k+1]
			eBody, err := io.ReadAll(e.Body)
			require.NoError(t, err)
			assert.Equal(t, g.StatusCode, e.StatusCode, "step %d %+v: %s status", i, s, fw)
			for _, name := range parityHeaders {
				assert.Equal(t, g.Header.Values(name), e.Header.Values(name), "step %d %+v: %s %s", i, s, fw, name)
			}
			if s.status == http.StatusNotFound {
				continue // each framework's own 404 page
			}
			if s.path == "/healthz" {
				assert.Equal(t, string(gBody), string(eBody), "step %d: %s body", i, fw)
				continue
			}
			eType, _, err := mime.ParseMediaType(e.Header.Get("Content-Type"))
			require.NoError(t, err)
			assert.Equal(t, "application/json", gType, "step %d", i)
			assert.Equal(t, gType, eType, "step %d: %s", i, fw)
			// Byte for byte, but the final newline of Echo's JSON encoder.
			assert.Equal(t, strings.TrimSuffix(string(gBody), "\n"), strings.TrimSuffix(string(eBody), "\n"), "step %d %+v: %s body", i, s, fw)
		}
		if s.status == http.StatusNotFound || s.path == "/healthz" {
			continue
		}
		if s.body != "" {
			assert.JSONEq(t, s.body, string(gBody), "step %d %+v: body", i, s)
		}
	}
}
