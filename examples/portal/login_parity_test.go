package main_test

import (
	"io"
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

// TestLoginParity sends the same sign-in attempts, at the same times, to
// the portal on Gin, Echo v4 and Echo v5, each with counts of its own, and
// checks the answers: status, rate limit headers and JSON body.
func TestLoginParity(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	handlers := parityHandlers(t, portal.Options{NumProxies: new(1), Admins: []string{"root"}, Now: clock.Now})
	const (
		right     = `{"user":"alice","password":"pw-alice"}`
		wrong     = `{"user":"alice","password":"guess"}`
		welcome   = `{"user":"alice"}`
		invalid   = `{"error":"invalid credentials"}`
		malformed = `{"error":"malformed body: want {\"user\":\"NAME\",\"password\":\"PASSWORD\"}"}`
	)
	type step struct {
		xff     string // X-Forwarded-For, the proxy at 10.0.0.1 being the peer
		user    string // Authorization: Bearer user, if not ""
		body    string
		advance time.Duration
		status  int
		reply   string // the JSON body expected, if not ""
		r       string // the RateLimit field of the 15 minutes expected, if not ""
	}
	steps := []step{
		{xff: "192.0.2.1", body: right, status: http.StatusOK, reply: welcome, r: `"login.anon.15min";r=4`},
		{xff: "192.0.2.1", body: right, status: http.StatusOK, reply: welcome, r: `"login.anon.15min";r=4`},
		{xff: "192.0.2.1", body: wrong, status: http.StatusUnauthorized, reply: invalid, r: `"login.anon.15min";r=4`},
		{xff: "192.0.2.1", body: wrong, status: http.StatusUnauthorized, reply: invalid, r: `"login.anon.15min";r=3`},
		{xff: "192.0.2.1", body: "{", status: http.StatusBadRequest, reply: malformed, r: `"login.anon.15min";r=2`},
		{xff: "192.0.2.1", body: right, status: http.StatusOK, reply: welcome, r: `"login.anon.15min";r=1`},
		// Signed in or not, an attempt is counted by its address; so is
		// an admin's.
		{xff: "192.0.2.1", user: "root", body: wrong, status: http.StatusUnauthorized, reply: invalid, r: `"login.anon.15min";r=1`},
		{xff: "192.0.2.1", user: "bob", body: wrong, status: http.StatusUnauthorized, reply: invalid, r: `"login.anon.15min";r=0`},
		{xff: "192.0.2.1", body: right, status: http.StatusTooManyRequests},
		{xff: "192.0.2.1", body: wrong, status: http.StatusTooManyRequests},
		{xff: "192.0.2.2", body: wrong, status: http.StatusUnauthorized, reply: invalid, r: `"login.anon.15min";r=4`},
		{xff: "192.0.2.1", body: right, advance: 14 * time.Minute, status: http.StatusTooManyRequests},
		{xff: "192.0.2.1", body: right, advance: time.Minute, status: http.StatusOK, reply: welcome, r: `"login.anon.15min";r=4`},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		answers := make([]*http.Response, len(handlers))
		bodies := make([]string, len(handlers))
		for j, h := range handlers {
			req := httptest.NewRequest(http.MethodPost, portal.LoginRoute, strings.NewReader(s.body))
			req.RemoteAddr = "10.0.0.1:40000"
			req.Header.Set("X-Forwarded-For", s.xff)
			req.Header.Set("Content-Type", "application/json")
			if s.user != "" {
				req.Header.Set("Authorization", "Bearer "+s.user)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			answers[j] = w.Result()
			b, err := io.ReadAll(answers[j].Body)
			require.NoError(t, err)
			bodies[j] = string(b)
		}
		g := answers[0]
		require.Equal(t, s.status, g.StatusCode, "step %d %+v: gin: %s", i, s, bodies[0])
		assert.Equal(t, `"login.anon.15min";q=5;w=900, "login.anon.day";q=20;w=86400`, g.Header.Get("Ratelimit-Policy"), "step %d: the scope login alone", i)
		if s.r != "" {
			assert.Regexp(t, s.r+`(;t=[0-9]+)?(,|$)`, g.Header.Get("Ratelimit"), "step %d", i)
		}
		if s.status == http.StatusTooManyRequests {
			assert.NotEmpty(t, g.Header.Get("Retry-After"), "step %d", i)
		} else {
			assert.JSONEq(t, s.reply, bodies[0], "step %d", i)
		}
		for k, e := range answers[1:] {
			fw := frameworks[k+1]
			assert.Equal(t, g.StatusCode, e.StatusCode, "step %d %+v: %s status", i, s, fw)
			for _, name := range []string{"Ratelimit-Policy", "Ratelimit", "Retry-After"} {
				assert.Equal(t, g.Header.Values(name), e.Header.Values(name), "step %d %+v: %s %s", i, s, fw, name)
			}
			assert.JSONEq(t, bodies[0], bodies[k+1], "step %d %+v: %s body", i, s, fw)
		}
	}
}
