package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// sendBytes sends method path with body (none if "") and the given headers.
func (p *process) sendBytes(t *testing.T, method, path, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// dialWSWith opens a WebSocket to the portal's /ws with the given headers.
func (p *process) dialWSWith(t *testing.T, header map[string]string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.url, "http")+"/ws", &websocket.DialOptions{HTTPHeader: h})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// TestExemptNetworks runs one script on every framework: behind one proxy,
// callers whose counted address is in -exempt-networks are never limited,
// anonymous or signed in, in every scope (the API, a search box, /rpc and
// /ws); a caller outside, or one that forges an entry before the proxy's,
// is limited as before.
func TestExemptNetworks(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "1", "-exempt-networks", "198.51.100.0/24,2001:db8::/32",
				"-rates", "api.anon=2/min,100/day api.user=2/min,100/day autocomplete.project.anon=1/min,100/day", "-warn", "40", "-drop", "50")
			office := map[string]string{"X-Forwarded-For": "198.51.100.7"}
			signedIn := map[string]string{"X-Forwarded-For": "198.51.100.8", "Authorization": "Bearer alice"}
			for _, h := range []map[string]string{office, signedIn, {"X-Forwarded-For": "2001:db8:5::1"}} {
				for i := range 10 {
					resp, body := p.getWith(t, "/api/records", h)
					require.Equal(t, http.StatusOK, resp.StatusCode, "request %d from %v: %s", i+1, h, body)
					assert.Empty(t, resp.Header.Get("RateLimit"), "no RateLimit headers for an exempt caller")
				}
			}
			for range 10 {
				resp, body := p.getWith(t, "/autocomplete/project?q=a", office)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			}
			for range 5 {
				resp, body := p.sendBytes(t, http.MethodPost, "/rpc", `{"method":"path_find","params":[{}]}`, office)
				require.Equal(t, http.StatusOK, resp.StatusCode, "never dropped: %s", body)
				assert.JSONEq(t, `{"result":{"status":"success"}}`, string(body))
			}
			ws := p.dialWSWith(t, office)
			for id := range 5 {
				reply, err := command(t, ws, id, "path_find")
				require.NoError(t, err, "never closed")
				assert.Nil(t, reply["warning"], "never warned")
			}

			outside := map[string]string{"X-Forwarded-For": "192.0.2.1"}
			forged := map[string]string{"X-Forwarded-For": "198.51.100.9, 192.0.2.2"}
			for _, h := range []map[string]string{outside, forged} {
				for range 2 {
					resp, _ := p.getWith(t, "/api/records", h)
					require.Equal(t, http.StatusOK, resp.StatusCode)
				}
				resp, _ := p.getWith(t, "/api/records", h)
				assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%v is limited", h)
			}
			resp, _ := p.sendBytes(t, http.MethodPost, "/rpc", `{"method":"path_find","params":[{}]}`, outside)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp, _ = p.sendBytes(t, http.MethodPost, "/rpc", `{"method":"path_find","params":[{}]}`, outside)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a caller outside is dropped at -drop")
		})
	}
}

// TestFailClosed runs the portal on every framework against one Redis,
// with -fail-closed api,ledger, and stops Redis: the API and the ledger
// refuse with 503 and Retry-After, the JSON body saying the limits cannot
// be checked, /ws closes with 1013, while a search box keeps failing open;
// the metrics count failed_closed. Once Redis is back, requests are served
// and counted again.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	var procs []*process
	for _, fw := range frameworks {
		procs = append(procs, start(t, "-framework", fw, "-num-proxies", "0", "-metrics", "-fail-closed", "api, ledger",
			"-redis", "redis://"+srv.Addr+"/0", "-rates", "api.anon=100/min,1000/day"))
	}
	for _, p := range procs {
		resp, body := p.get(t, "/api/records", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		require.NotEmpty(t, resp.Header.Get("RateLimit"), "counted in Redis")
	}

	require.NoError(t, srv.Stop())
	for i, p := range procs {
		for range 5 {
			resp, body := p.get(t, "/api/records", "alice")
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", frameworks[i], body)
			assert.Equal(t, "1", resp.Header.Get("Retry-After"), "the breaker's back-off (1s), or the default")
			assert.Empty(t, resp.Header.Get("RateLimit"))
			var deny core.DenyBody
			require.NoError(t, json.Unmarshal(body, &deny), "%s", body)
			assert.Equal(t, core.DenyBody{Detail: "Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.", RetryAfter: 1}, deny)
		}
		resp, body := p.sendBytes(t, http.MethodPost, "/rpc", `{"method":"ping","params":[{}]}`, nil)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", frameworks[i], body)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		resp, body = p.get(t, "/autocomplete/project?q=a", "")
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: the search box fails open: %s", frameworks[i], body)
		assert.NotEmpty(t, searchResults(t, body))

		ws := p.dialWS(t, "")
		_, err := command(t, ws, 1, "ping")
		assert.Equal(t, websocket.StatusTryAgainLater, websocket.CloseStatus(err), "%s: %v", frameworks[i], err)

		m := p.metrics(t)
		assert.Equal(t, 5.0, m[decisions("api", "user", "failed_closed")], frameworks[i])
		assert.Equal(t, 2.0, m[decisions("ledger", "anon", "failed_closed")], "%s: /rpc and /ws", frameworks[i])
		assert.Equal(t, 1.0, m[decisions("autocomplete.project", "anon", "failed_open")], frameworks[i])
		assert.GreaterOrEqual(t, m["ratescope_store_failures_total"], 7.0, frameworks[i])
		assert.Contains(t, p.stderr.String(), "request refused (the scope fails closed)", "logged")
	}

	require.NoError(t, srv.Restart())
	for i, p := range procs {
		require.Eventually(t, func() bool {
			resp, _ := p.get(t, "/api/records", "")
			return resp.StatusCode == http.StatusOK && resp.Header.Get("RateLimit") != ""
		}, 20*time.Second, 50*time.Millisecond, "%s serves and counts again once Redis is back", frameworks[i])
	}
}

// loginFrom sends POST /api/login with body from addr (the portal behind
// one proxy), signed in as user unless user is "".
func (p *process) loginFrom(t *testing.T, body, addr, user string) (*http.Response, []byte) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "X-Forwarded-For": addr}
	if user != "" {
		h["Authorization"] = "Bearer " + user
	}
	return p.sendBytes(t, http.MethodPost, "/api/login", body, h)
}

// TestFailClosedLogin runs the portal on every framework against one
// Redis with -fail-closed login, and stops Redis: every sign-in attempt,
// right, wrong, malformed or signed in, is refused with 503 and
// Retry-After before the password is checked (no 200, no 401), while the
// API fails open; the metrics count failed_closed. Once Redis is back, a
// right attempt is served and given back, and the wrong ones are counted
// again, together on the three.
func TestFailClosedLogin(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	var procs []*process
	for _, fw := range frameworks {
		procs = append(procs, start(t, "-framework", fw, "-num-proxies", "1", "-metrics", "-fail-closed", "login",
			"-redis", "redis://"+srv.Addr+"/0"))
	}
	const guesser = "192.0.2.50"
	for i, p := range procs {
		resp, body := p.loginFrom(t, credentials("frank", "pw-frank"), guesser, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", frameworks[i], body)
		require.Regexp(t, `"login.anon.15min";r=4(,|$)`, resp.Header.Get("RateLimit"), "counted in Redis, then given back")
	}

	require.NoError(t, srv.Stop())
	attempts := []struct{ body, user string }{
		{body: credentials("frank", "pw-frank")},
		{body: credentials("frank", "guess")},
		{body: "not json"},
		{body: credentials("frank", "guess"), user: "bob"},
	}
	for i, p := range procs {
		for range 2 {
			for _, a := range attempts {
				resp, body := p.loginFrom(t, a.body, guesser, a.user)
				require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s, %s: refused before the password is checked: %s", frameworks[i], a.body, body)
				assert.Equal(t, "1", resp.Header.Get("Retry-After"), "the breaker's back-off (1s), or the default")
				assert.Empty(t, resp.Header.Get("RateLimit"))
				var deny core.DenyBody
				require.NoError(t, json.Unmarshal(body, &deny), "%s", body)
				assert.Equal(t, core.DenyBody{Detail: "Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.", RetryAfter: 1}, deny)
			}
		}
		resp, body := p.getWith(t, "/api/records", map[string]string{"X-Forwarded-For": guesser})
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: the API fails open: %s", frameworks[i], body)

		m := p.metrics(t)
		assert.Equal(t, 8.0, m[decisions("login", "anon", "failed_closed")], frameworks[i])
		assert.Equal(t, 1.0, m[decisions("login", "anon", "allowed")], "%s: only the attempt before Redis stopped", frameworks[i])
		assert.Zero(t, m[decisions("login", "anon", "failed_open")], frameworks[i])
		assert.Equal(t, 1.0, m[decisions("api", "anon", "failed_open")], frameworks[i])
		assert.Contains(t, p.stderr.String(), "request refused (the scope fails closed)", "logged")
		assert.Contains(t, p.stderr.String(), "scope=login")
	}

	require.NoError(t, srv.Restart())
	for i, p := range procs {
		require.Eventually(t, func() bool {
			resp, _ := p.getWith(t, "/api/records", map[string]string{"X-Forwarded-For": "192.0.2.51"})
			return resp.StatusCode == http.StatusOK && resp.Header.Get("RateLimit") != ""
		}, 20*time.Second, 50*time.Millisecond, "%s counts again once Redis is back", frameworks[i])
	}
	// An address of its own: a round trip the store gave up on while Redis
	// was down may reach it once it is back, and count the guesser's
	// refused attempts (docs/reliability.md, "Fail closed per scope").
	// The restarted Redis is otherwise empty, and the right attempts are
	// given back: the wrong ones over the three processes count from 5.
	const fresh = "192.0.2.52"
	for i, p := range procs {
		resp, body := p.loginFrom(t, credentials("frank", "pw-frank"), fresh, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: the password is checked again: %s", frameworks[i], body)
		assert.Regexp(t, fmt.Sprintf(`"login.anon.15min";r=%d(,|$)`, 4-i), resp.Header.Get("RateLimit"), "%s: counted, then given back", frameworks[i])
		resp, body = p.loginFrom(t, credentials("frank", "guess"), fresh, "")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", frameworks[i], body)
		assert.Regexp(t, fmt.Sprintf(`"login.anon.15min";r=%d(,|$)`, 4-i), resp.Header.Get("RateLimit"), "%s: counted", frameworks[i])
	}
	resp, _ := procs[0].loginFrom(t, credentials("frank", "pw-frank"), guesser, "")
	t.Logf("the guesser after the recovery (its refused attempts may count): %d, RateLimit %q", resp.StatusCode, resp.Header.Get("RateLimit"))
}

// TestAllowlistAndFailClosedUsage checks that a bad -exempt-networks or an
// unknown -fail-closed scope is a usage error: exit status 2, the bad part
// named.
func TestAllowlistAndFailClosedUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "bad network", args: []string{"-exempt-networks", "10.0.0.0/8,nope"}, want: `"nope"`},
		{name: "unknown scope", args: []string{"-fail-closed", "api,logn"}, want: `"logn" is no known scope`},
		{name: "unknown local scope", args: []string{"-fail-local", "logn"}, want: `-fail-local: "logn" is no known scope`},
		{name: "closed and local", args: []string{"-fail-closed", "login", "-fail-local", "api,login"}, want: `scope "login" is in both -fail-closed and -fail-local`},
		{name: "local balance scope", args: []string{"-fail-local", "ledger"}, want: `-fail-local "ledger": the balance scope can fail open or closed, not local`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, portalBin, append([]string{"-addr", "127.0.0.1:0"}, tt.args...)...)
			cmd.Env = portalEnv()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "want an exit status, got %v; stderr:\n%s", err, &stderr)
			assert.Equal(t, 2, exit.ExitCode(), "%s", &stderr)
			assert.Contains(t, stderr.String(), tt.want)
		})
	}
}
