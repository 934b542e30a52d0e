package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// login sends POST /api/login with body, and the Authorization header of
// user unless user is "".
func (p *process) login(t *testing.T, body, user string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url+"/api/login", bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp, b.Bytes()
}

// credentials returns the body of a sign-in of user with password.
func credentials(user, password string) string {
	b, _ := json.Marshal(map[string]string{"user": user, "password": password})
	return string(b)
}

// requireRefusedLogin checks that resp is a sign-in refused over the limit:
// 429 with Retry-After.
func requireRefusedLogin(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", resp.Header.Get("Retry-After"))
	assert.Positive(t, retry)
}

// TestLogin: POST /api/login counts only the failed attempts of an
// address, 5 per 15 minutes, and refuses the caller over the limit before
// the password is checked.
func TestLogin(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0")
			for i := range 10 {
				resp, body := p.login(t, credentials("alice", "pw-alice"), "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "right attempt %d: %s", i+1, body)
				assert.JSONEq(t, `{"user":"alice"}`, string(body))
				assert.Equal(t, `"login.anon.15min";q=5;w=900, "login.anon.day";q=20;w=86400`, resp.Header.Get("RateLimit-Policy"))
			}
			resp, body := p.login(t, "not json", "")
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
			for i := range 4 {
				// Signed in or not: counted by address.
				resp, body := p.login(t, credentials("alice", "secret"), []string{"", "bob"}[i%2])
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "wrong attempt %d: %s", i+1, body)
				assert.JSONEq(t, `{"error":"invalid credentials"}`, string(body))
			}
			resp, body = p.login(t, credentials("alice", "pw-alice"), "")
			requireRefusedLogin(t, resp, body)
			resp, body = p.login(t, credentials("alice", "secret"), "")
			requireRefusedLogin(t, resp, body)

			// The /api group's scope did not count the attempts.
			resp, body = p.get(t, "/api/records", "")
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Regexp(t, `"api.anon.min";r=59(,|$)`, resp.Header.Get("RateLimit"))
		})
	}
}

// TestLoginTakesJSONOnly: POST /api/login reads a JSON body only. A form
// (user=...&password=..., as an HTML form posts it, and as the how-to's
// examples read it) is a malformed body, 400, and counts as a failure,
// right password or not: five of them lock the address out, a right JSON
// attempt included (docs/howto/protect-a-sign-in-form.md says so).
func TestLoginTakesJSONOnly(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0")
			for i := range 5 {
				form := url.Values{"user": {"alice"}, "password": {"pw-alice"}}.Encode()
				resp, body := p.sendBytes(t, http.MethodPost, "/api/login", form, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
				require.Equal(t, http.StatusBadRequest, resp.StatusCode, "form attempt %d: %s", i+1, body)
				assert.JSONEq(t, `{"error":"malformed body: want {\"user\":\"NAME\",\"password\":\"PASSWORD\"}"}`, string(body))
				assert.Regexp(t, fmt.Sprintf(`"login.anon.15min";r=%d(,|$)`, 4-i), resp.Header.Get("RateLimit"), "counted")
			}
			resp, body := p.login(t, credentials("alice", "pw-alice"), "")
			requireRefusedLogin(t, resp, body)
		})
	}
}

// TestLoginRates: -rates changes the scope login's limits.
func TestLoginRates(t *testing.T) {
	t.Parallel()
	p := start(t, "-num-proxies", "0", "-rates", "login.anon=3/min")
	for range 3 {
		resp, body := p.login(t, credentials("carol", "nope"), "")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", body)
		assert.Equal(t, `"login.anon.min";q=3;w=60`, resp.Header.Get("RateLimit-Policy"))
	}
	resp, body := p.login(t, credentials("carol", "pw-carol"), "")
	requireRefusedLogin(t, resp, body)
}

// loginStorm sends n wrong attempts at once, spread over ps, and returns
// how many got each status.
func loginStorm(t *testing.T, n int, ps ...*process) map[int]int {
	t.Helper()
	codes := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, err := http.NewRequest(http.MethodPost, ps[i%len(ps)].url+"/api/login", bytes.NewBufferString(credentials("dave", "guess")))
			if err != nil {
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			_ = resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	return count
}

// loginOutcomes returns the decisions of scope login the processes made
// (their -metrics), by outcome: allowed, denied, failed_open.
func loginOutcomes(t *testing.T, ps ...*process) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, p := range ps {
		m := p.metrics(t)
		for _, o := range []string{"allowed", "denied", "failed_open"} {
			out[o] += m[decisions("login", "anon", o)]
		}
	}
	return out
}

// requireStrictStorm sends 50 wrong attempts at once over ps, against a
// limit of 5, and checks that at most 5 were counted and answered 401, the
// others refused with 429. A decision that failed open (the store did not
// answer in time, on a loaded machine) is served without being counted:
// the metrics tell them apart, and without one exactly 5 are answered 401.
// It returns how many were counted.
func requireStrictStorm(t *testing.T, ps ...*process) int {
	t.Helper()
	before := loginOutcomes(t, ps...)
	codes := loginStorm(t, 50, ps...)
	after := loginOutcomes(t, ps...)
	allowed := int(after["allowed"] - before["allowed"])
	failed := int(after["failed_open"] - before["failed_open"])
	assert.LessOrEqual(t, allowed, 5, "counted and served")
	assert.Equal(t, codes[http.StatusUnauthorized], allowed+failed, "answered 401: counted, or failed open")
	assert.Equal(t, codes[http.StatusTooManyRequests], int(after["denied"]-before["denied"]))
	assert.Equal(t, 50, codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests], "%v", codes)
	if failed > 0 {
		t.Logf("%d of the 50 attempts failed open (the store did not answer in time); %d counted", failed, allowed)
	} else {
		assert.Equal(t, map[int]int{http.StatusUnauthorized: 5, http.StatusTooManyRequests: 45}, codes)
	}
	return allowed
}

// TestLoginConcurrent: 50 wrong attempts at once against a limit of 5: 5
// are answered 401, the other 45 are refused with 429.
func TestLoginConcurrent(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-metrics")
			requireStrictStorm(t, p)
		})
	}
}

// TestLoginRedis: the portal on Gin, Echo v4 and Echo v5 sharing one Redis
// count the failed attempts together, strictly: 50 wrong attempts at once
// over the three, 5 answered 401 (see requireStrictStorm); a right attempt
// is given back on all.
func TestLoginRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	args := []string{"-num-proxies", "0", "-metrics", "-redis", "redis://" + srv.Addr + "/0"}
	g := start(t, append([]string{"-framework", "gin"}, args...)...)
	e := start(t, append([]string{"-framework", "echo"}, args...)...)
	e5 := start(t, append([]string{"-framework", "echo5"}, args...)...)
	for range 3 {
		for _, p := range []*process{g, e, e5} {
			resp, body := p.login(t, credentials("erin", "pw-erin"), "")
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Regexp(t, `"login.anon.15min";r=4(,|$)`, resp.Header.Get("RateLimit"), "right attempts given back")
		}
	}
	if requireStrictStorm(t, g, e, e5) < 5 {
		return // some failed open: the limit is not used up
	}
	for _, p := range []*process{g, e, e5} {
		resp, body := p.login(t, credentials("erin", "pw-erin"), "")
		requireRefusedLogin(t, resp, body)
	}
}
