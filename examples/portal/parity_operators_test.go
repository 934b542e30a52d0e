package main_test

import (
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/examples/portal/internal/echo5portal"
	"github.com/ratescope/ratescope/examples/portal/internal/echoportal"
	"github.com/ratescope/ratescope/examples/portal/internal/ginportal"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

// parityStep is one request of a parity script and what is expected of
// Gin's answer; Echo v4's and Echo v5's must equal Gin's.
type parityStep struct {
	method  string        // default GET
	path    string        // with the query
	xff     string        // X-Forwarded-For, the proxy at 10.0.0.1 being the peer
	user    string        // Authorization: Bearer user, if not ""
	token   string        // X-Admin-Token, if not ""
	body    string        // the request body, JSON
	advance time.Duration // clock move before the request
	status  int
	reply   string // the body expected, byte for byte but a final newline, if not ""; none for a 204
	limit   string // the RateLimit field expected, if not ""; "-" for none
	policy  string // the RateLimit-Policy field expected, if not ""; "-" for none
}

// parityHeaders are the response fields the limiter writes, compared
// across frameworks value for value.
var parityHeaders = []string{"Ratelimit-Policy", "Ratelimit", "Retry-After", "Ratescope-Warning"}

// parityHandlers returns the portal of o on Gin, Echo v4 and Echo v5, in
// the order of frameworks, each with an App and counts of its own.
func parityHandlers(t *testing.T, o portal.Options) []http.Handler {
	t.Helper()
	var handlers []http.Handler
	for _, build := range []func(*portal.App) (http.Handler, error){ginportal.New, echoportal.New, echo5portal.New} {
		a, err := portal.New(o, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		t.Cleanup(func() { _ = a.Close() })
		h, err := build(a)
		require.NoError(t, err)
		handlers = append(handlers, h)
	}
	return handlers
}

// runParity sends each step to every handler, at the same time of clock,
// and checks Gin's answer against the step and the others' against Gin's:
// the status, the limiter's fields, the media type of Content-Type (Gin
// adds "; charset=utf-8" to JSON, Echo does not) and the body byte for
// byte but the final newline Echo's JSON encoder adds. The body of a 404
// or 405 that the router answers is each framework's own page and is not
// compared (the admin route's 404 for an unknown scope is the portal's).
func runParity(t *testing.T, clock *storetest.Clock, handlers []http.Handler, steps []parityStep) {
	t.Helper()
	for i, s := range steps {
		clock.Advance(s.advance)
		method := s.method
		if method == "" {
			method = http.MethodGet
		}
		answers := make([]*http.Response, len(handlers))
		bodies := make([]string, len(handlers))
		for j, h := range handlers {
			req := httptest.NewRequest(method, s.path, strings.NewReader(s.body))
			req.RemoteAddr = "10.0.0.1:40000"
			req.Header.Set("X-Forwarded-For", s.xff)
			if s.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if s.user != "" {
				req.Header.Set("Authorization", "Bearer "+s.user)
			}
			if s.token != "" {
				req.Header.Set(portal.AdminTokenHeader, s.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			answers[j] = w.Result()
			b, err := io.ReadAll(answers[j].Body)
			require.NoError(t, err)
			bodies[j] = strings.TrimSuffix(string(b), "\n")
		}
		where := func(fw string) string {
			return fmt.Sprintf("%s: step %d %s %s xff=%q user=%q", fw, i, method, s.path, s.xff, s.user)
		}
		g := answers[0]
		assert.Equal(t, s.status, g.StatusCode, "%s: %s", where("gin"), bodies[0])
		if s.reply != "" {
			assert.Equal(t, s.reply, bodies[0], where("gin"))
		}
		if s.status == http.StatusNoContent {
			assert.Empty(t, bodies[0], where("gin"))
		}
		for _, want := range []struct{ name, value string }{{"Ratelimit", s.limit}, {"Ratelimit-Policy", s.policy}} {
			switch want.value {
			case "":
			case "-":
				assert.Empty(t, g.Header.Values(want.name), "%s: %s", where("gin"), want.name)
			default:
				assert.Equal(t, want.value, g.Header.Get(want.name), "%s: %s", where("gin"), want.name)
			}
		}
		if s.status == http.StatusTooManyRequests || s.status == http.StatusServiceUnavailable {
			assert.NotEmpty(t, g.Header.Get("Retry-After"), where("gin"))
		}
		gType, _, _ := mime.ParseMediaType(g.Header.Get("Content-Type"))
		// Gin's own 404 and 405 pages are text, the portal's JSON.
		own := (g.StatusCode == http.StatusNotFound || g.StatusCode == http.StatusMethodNotAllowed) && gType == "text/plain"
		for k, e := range answers[1:] {
			fw := frameworks[k+1]
			assert.Equal(t, g.StatusCode, e.StatusCode, "%s: %s", where(fw), bodies[k+1])
			for _, name := range parityHeaders {
				assert.Equal(t, g.Header.Values(name), e.Header.Values(name), "%s: %s", where(fw), name)
			}
			if own {
				continue
			}
			eType, _, _ := mime.ParseMediaType(e.Header.Get("Content-Type"))
			assert.Equal(t, gType, eType, "%s: Content-Type", where(fw))
			assert.Equal(t, bodies[0], bodies[k+1], "%s: body", where(fw))
		}
	}
}

// TestOperatorParity runs one script over the operators' routes and flags
// on Gin, Echo v4 and Echo v5: rates in long units, POST /api/login (right,
// wrong, malformed, over the limit), DELETE /admin/limits/SCOPE (204, 403,
// 404, 400, then the full limit less one), a plan user's RateLimit-Policy,
// and an exempt network. Every answer must be the same on the three.
func TestOperatorParity(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	handlers := parityHandlers(t, portal.Options{
		Rates: core.RateTable{
			"api.anon": "3/minutes,100/days", "api.user": "4/min,1000/day", "api.user@gold": "6/mins,2000/day",
			"login.anon": "3/minute", "autocomplete.project.anon": "1/min,100/day",
		},
		NumProxies:     new(1),
		Admins:         []string{"root"},
		AdminToken:     "s3cret",
		ExemptNetworks: core.Networks{netip.MustParsePrefix("203.0.113.0/24")},
		PlanUsers:      portal.PlanUsers{"gold": {"carol"}},
		Now:            clock.Now,
	})
	const (
		right, wrong = `{"user":"alice","password":"pw-alice"}`, `{"user":"alice","password":"guess"}`
		welcome      = `{"user":"alice"}`
		invalid      = `{"error":"invalid credentials"}`
		malformed    = `{"error":"malformed body: want {\"user\":\"NAME\",\"password\":\"PASSWORD\"}"}`
		throttled    = `{"detail":"Request was throttled. Expected available in 60 seconds.","retry_after":60}`
		forbidden    = `{"error":"missing or wrong X-Admin-Token"}`
		oneOf        = `{"error":"give one of caller=ADDRESS and user=NAME"}`
		loginPolicy  = `"login.anon.min";q=3;w=60`
		anonPolicy   = `"api.anon.min";q=3;w=60, "api.anon.day";q=100;w=86400`
		userPolicy   = `"api.user.min";q=4;w=60, "api.user.day";q=1000;w=86400`
		goldPolicy   = `"api.user.min";q=6;w=60, "api.user.day";q=2000;w=86400`
		post, del    = http.MethodPost, http.MethodDelete
		admin        = portal.AdminLimitsRoute
	)
	steps := []parityStep{
		// Sign-in: only failures count, 3 a minute by address; over the
		// limit, 429 before the password is checked.
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: right, status: 200, reply: welcome, limit: `"login.anon.min";r=2`, policy: loginPolicy},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: right, status: 200, reply: welcome, limit: `"login.anon.min";r=2`},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: wrong, status: 401, reply: invalid, limit: `"login.anon.min";r=2`},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: "{", status: 400, reply: malformed, limit: `"login.anon.min";r=1`},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: `{"user":"alice"}`, status: 400, reply: malformed, limit: `"login.anon.min";r=0`},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: right, status: 429, reply: throttled, policy: loginPolicy},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", user: "root", body: wrong, advance: 10 * time.Second, status: 429},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: "not json", status: 429},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.2", body: wrong, status: 401, reply: invalid, limit: `"login.anon.min";r=2`},
		{path: portal.LoginRoute, xff: "192.0.2.3", status: 405, limit: "-"},
		// The sign-in scope is unblocked like any other.
		{method: del, path: admin + "login?caller=192.0.2.1", token: "s3cret", xff: "192.0.2.9", status: 204, limit: "-"},
		{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: right, status: 200, reply: welcome, limit: `"login.anon.min";r=2`},

		// Unblock: 192.0.2.4 uses its 3 a minute in scope api.
		{path: "/api/records", xff: "192.0.2.4", status: 200, limit: `"api.anon.min";r=2, "api.anon.day";r=99`, policy: anonPolicy},
		{path: "/api/records", xff: "192.0.2.4", status: 200},
		{path: "/api/records", xff: "192.0.2.4", status: 200},
		{path: "/api/records", xff: "192.0.2.4", advance: 15 * time.Second, status: 429, reply: `{"detail":"Request was throttled. Expected available in 45 seconds.","retry_after":45}`},
		// A missing or wrong token: 403, checked first, and nothing changes.
		{method: del, path: admin + "api?caller=192.0.2.4", xff: "192.0.2.9", status: 403, reply: forbidden, limit: "-"},
		{method: del, path: admin + "api?caller=192.0.2.4", token: "s3cre", xff: "192.0.2.9", status: 403, reply: forbidden},
		{method: del, path: admin + "nope?caller=192.0.2.4", token: "S3CRET", xff: "192.0.2.9", status: 403, reply: forbidden},
		{path: "/api/records", xff: "192.0.2.4", status: 429},
		// An unknown scope: 404 with a body of the portal's.
		{method: del, path: admin + "nope?caller=192.0.2.4", token: "s3cret", xff: "192.0.2.9", status: 404, reply: `{"error":"unknown scope \"nope\""}`},
		{method: del, path: admin + "autocomplete.projekt?caller=192.0.2.4", token: "s3cret", xff: "192.0.2.9", status: 404, reply: `{"error":"unknown scope \"autocomplete.projekt\""}`},
		// Neither or both of caller and user, an empty user, a bad address: 400.
		{method: del, path: admin + "api", token: "s3cret", xff: "192.0.2.9", status: 400, reply: oneOf},
		{method: del, path: admin + "api?caller=192.0.2.4&user=alice", token: "s3cret", xff: "192.0.2.9", status: 400, reply: oneOf},
		{method: del, path: admin + "api?user=", token: "s3cret", xff: "192.0.2.9", status: 400, reply: `{"error":"user: want a user name"}`},
		{method: del, path: admin + "api?caller=192.0.2", token: "s3cret", xff: "192.0.2.9", status: 400, reply: `{"error":"caller \"192.0.2\": want an IPv4 or IPv6 address"}`},
		{path: "/api/records", xff: "192.0.2.4", status: 429},
		// 204, and the next request shows the full limit less one, in
		// every window of the scope.
		{method: del, path: admin + "api?caller=192.0.2.4", token: "s3cret", xff: "192.0.2.9", status: 204, limit: "-"},
		{path: "/api/records", xff: "192.0.2.4", status: 200, limit: `"api.anon.min";r=2, "api.anon.day";r=99`},
		// A signed-in user is unblocked by name, wherever they call from.
		{path: "/api/records", xff: "192.0.2.5", user: "alice", status: 200, limit: `"api.user.min";r=3, "api.user.day";r=999`, policy: userPolicy},
		{path: "/api/records", xff: "192.0.2.6", user: "alice", status: 200},
		{path: "/api/export", xff: "192.0.2.6", user: "alice", status: 429},
		{method: del, path: admin + "api?user=alice", token: "s3cret", xff: "192.0.2.9", status: 204},
		{path: "/api/records", xff: "192.0.2.7", user: "alice", status: 200, limit: `"api.user.min";r=3, "api.user.day";r=999`},
		// A search box's scope, and the route's other methods.
		{path: "/autocomplete/project?q=glacier", xff: "192.0.2.4", status: 200},
		{path: "/autocomplete/project?q=glacier", xff: "192.0.2.4", status: 429, reply: `{"results":[]}`},
		{method: del, path: admin + "autocomplete.project?caller=192.0.2.4", token: "s3cret", xff: "192.0.2.9", status: 204},
		{path: "/autocomplete/project?q=glacier", xff: "192.0.2.4", status: 200, reply: `{"results":[{"id":"project-04","label":"Alpine glacier mass balance"}]}`},
		{path: admin + "api?caller=192.0.2.4", token: "s3cret", xff: "192.0.2.9", status: 405},
		{method: post, path: "/api/records", xff: "192.0.2.4", status: 405, limit: "-"},
		{path: "/api/nothing", xff: "192.0.2.4", status: 404, limit: "-"},
		{method: post, path: "/autocomplete/project?q=glacier", xff: "192.0.2.4", status: 405, limit: "-"},
		{path: "/rpc", xff: "192.0.2.4", status: 405, limit: "-"},
		{method: post, path: "/api/whoami", xff: "192.0.2.4", status: 405, limit: "-"},

		// A plan: carol on gold has its rates, the others api.user's.
		{path: "/api/records", xff: "192.0.2.10", user: "carol", status: 200, limit: `"api.user.min";r=5, "api.user.day";r=1999`, policy: goldPolicy},
		{path: "/api/export", xff: "192.0.2.10", user: "carol", status: 200, limit: `"api.user.min";r=0, "api.user.day";r=1994`, policy: goldPolicy},
		{path: "/api/records", xff: "192.0.2.10", user: "carol", status: 429, policy: goldPolicy},
		{path: "/api/records", xff: "192.0.2.10", user: "bob", status: 200, policy: userPolicy},

		// An exempt network: never limited, anonymous or signed in, in
		// every scope; no rate-limit fields.
		{path: "/api/export", xff: "203.0.113.7", status: 200, limit: "-", policy: "-"},
		{path: "/api/export", xff: "203.0.113.7", status: 200, limit: "-", policy: "-"},
		{path: "/api/records", xff: "203.0.113.8", user: "alice", status: 200, limit: "-", policy: "-"},
		{path: "/api/records", xff: "203.0.113.8", user: "alice", status: 200, limit: "-", policy: "-"},
		{path: "/api/records", xff: "203.0.113.8", user: "alice", status: 200, limit: "-", policy: "-"},
		{path: "/api/records", xff: "203.0.113.8", user: "alice", status: 200, limit: "-", policy: "-"},
		{path: "/autocomplete/project?q=soil", xff: "203.0.113.7", status: 200, limit: "-"},
		{path: "/autocomplete/project?q=soil", xff: "203.0.113.7", status: 200, limit: "-"},
		{method: post, path: portal.LoginRoute, xff: "203.0.113.7", body: wrong, status: 401, reply: invalid, limit: "-"},
		{method: post, path: portal.LoginRoute, xff: "203.0.113.7", body: wrong, status: 401, limit: "-"},
		{method: post, path: portal.LoginRoute, xff: "203.0.113.7", body: wrong, status: 401, limit: "-"},
		{method: post, path: portal.LoginRoute, xff: "203.0.113.7", body: wrong, status: 401, limit: "-"},
		// The proxy's own address is not the counted one.
		{path: "/api/whoami", xff: "198.51.100.1, 203.0.113.7", status: 200, reply: `{"kind":"anon","id":"203.0.113.7"}`},
		{path: "/api/records", xff: "203.0.113.7, 192.0.2.4", status: 200, limit: `"api.anon.min";r=1, "api.anon.day";r=98`},
	}
	runParity(t, clock, handlers, steps)
}

// TestHeaderPolicyParity runs one script under -headers refused and none
// on Gin, Echo v4 and Echo v5: the rate-limit fields on the refusals only,
// or on none, a 429 always with Retry-After, for the API, a plan, the
// sign-in form and a search box; every answer the same on the three.
func TestHeaderPolicyParity(t *testing.T) {
	t.Parallel()
	const (
		anonPolicy  = `"api.anon.min";q=2;w=60, "api.anon.day";q=100;w=86400`
		goldPolicy  = `"api.user.min";q=3;w=60, "api.user.day";q=2000;w=86400`
		loginPolicy = `"login.anon.min";q=1;w=60`
		post        = http.MethodPost
		wrong       = `{"user":"alice","password":"guess"}`
	)
	for _, tc := range []struct {
		mode     core.HeaderMode
		refusals bool // whether a refusal carries RateLimit and RateLimit-Policy
	}{
		{mode: core.HeadersRefused, refusals: true},
		{mode: core.HeadersNone},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			clock := storetest.NewClock(storetest.Start)
			handlers := parityHandlers(t, portal.Options{
				Rates: core.RateTable{
					"api.anon": "2/min,100/day", "api.user@gold": "3/min,2000/day",
					"login.anon": "1/min", "autocomplete.project.anon": "1/min,100/day",
				},
				NumProxies: new(1),
				PlanUsers:  portal.PlanUsers{"gold": {"carol"}},
				AdminToken: "s3cret",
				Headers:    tc.mode,
				Now:        clock.Now,
			})
			refused := func(field string) string {
				if tc.refusals {
					return field
				}
				return "-"
			}
			steps := []parityStep{
				{path: "/api/records", xff: "192.0.2.1", status: 200, limit: "-", policy: "-"},
				{path: "/api/records", xff: "192.0.2.1", status: 200, limit: "-", policy: "-"},
				{path: "/api/records", xff: "192.0.2.1", advance: 20 * time.Second, status: 429,
					reply: `{"detail":"Request was throttled. Expected available in 40 seconds.","retry_after":40}`,
					limit: refused(`"api.anon.min";r=0;t=40, "api.anon.day";r=98`), policy: refused(anonPolicy)},
				{path: "/api/records", xff: "192.0.2.2", user: "carol", status: 200, limit: "-", policy: "-"},
				{path: "/api/records", xff: "192.0.2.2", user: "carol", status: 200, limit: "-", policy: "-"},
				{path: "/api/records", xff: "192.0.2.2", user: "carol", status: 200, limit: "-", policy: "-"},
				{path: "/api/records", xff: "192.0.2.2", user: "carol", status: 429, policy: refused(goldPolicy)},
				{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: wrong, status: 401, limit: "-", policy: "-"},
				{method: post, path: portal.LoginRoute, xff: "192.0.2.1", body: wrong, status: 429, policy: refused(loginPolicy)},
				{path: "/autocomplete/project?q=glacier", xff: "192.0.2.1", status: 200, limit: "-", policy: "-"},
				{path: "/autocomplete/project?q=glacier", xff: "192.0.2.1", status: 429, reply: `{"results":[]}`,
					limit: refused(`"autocomplete.project.anon.min";r=0;t=60, "autocomplete.project.anon.day";r=99`)},
				{method: http.MethodDelete, path: portal.AdminLimitsRoute + "api?caller=192.0.2.1", token: "s3cret", xff: "192.0.2.9", status: 204},
				{path: "/api/records", xff: "192.0.2.1", status: 200, limit: "-", policy: "-"},
			}
			runParity(t, clock, handlers, steps)
		})
	}
}

// TestFailClosedParity runs the portal on Gin, Echo v4 and Echo v5 with
// -fail-closed api,login against a Redis address where no server listens:
// the scopes named refuse with 503, Retry-After and the same body on the
// three, a sign-in before its password is checked; a search box fails open.
func TestFailClosedParity(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	clock := storetest.NewClock(storetest.Start)
	handlers := parityHandlers(t, portal.Options{
		RedisURL:   "redis://" + dead + "/0",
		NumProxies: new(1),
		FailClosed: []string{"api", "login"},
		Now:        clock.Now,
	})
	const unavailable = `{"detail":"Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.","retry_after":1}`
	steps := []parityStep{
		{path: "/api/records", xff: "192.0.2.1", status: 503, reply: unavailable, limit: "-", policy: "-"},
		{path: "/api/export", xff: "192.0.2.1", user: "alice", status: 503, reply: unavailable, limit: "-", policy: "-"},
		{method: http.MethodPost, path: portal.LoginRoute, xff: "192.0.2.1", body: `{"user":"alice","password":"pw-alice"}`, status: 503, reply: unavailable},
		{path: "/autocomplete/project?q=glacier", xff: "192.0.2.1", status: 200, reply: `{"results":[{"id":"project-04","label":"Alpine glacier mass balance"}]}`, limit: "-"},
	}
	runParity(t, clock, handlers, steps)
}

// TestAdminRouteAbsentParity checks that without -admin-token the admin
// route does not exist: 404 on Gin, Echo v4 and Echo v5, whatever the
// method or token, and nothing is counted.
func TestAdminRouteAbsentParity(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	handlers := parityHandlers(t, portal.Options{NumProxies: new(1), Rates: core.RateTable{"api.anon": "1/min,100/day"}, Now: clock.Now})
	steps := []parityStep{
		{method: http.MethodDelete, path: portal.AdminLimitsRoute + "api?caller=192.0.2.1", token: "s3cret", xff: "192.0.2.1", status: 404, limit: "-"},
		{method: http.MethodDelete, path: portal.AdminLimitsRoute + "api?caller=192.0.2.1", xff: "192.0.2.1", status: 404, limit: "-"},
		{path: portal.AdminLimitsRoute + "api?caller=192.0.2.1", token: "s3cret", xff: "192.0.2.1", status: 404, limit: "-"},
		{path: "/api/records", xff: "192.0.2.1", status: 200, limit: `"api.anon.min";r=0, "api.anon.day";r=99`},
	}
	runParity(t, clock, handlers, steps)
}
