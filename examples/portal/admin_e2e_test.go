package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// send sends method path with body (if not "") and the headers given, and
// returns the answer and its body.
func (p *process) send(t *testing.T, method, path string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.url+path, r)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

const adminToken = "s3cret-token"

// TestAdminReset runs the contract of -admin-token on Gin, Echo v4 and
// Echo v5, with counts in memory and in Redis.
func TestAdminReset(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	for _, store := range []string{"memory", "redis"} {
		for i, fw := range frameworks {
			t.Run(store+"/"+fw, func(t *testing.T) {
				t.Parallel()
				args := []string{"-framework", fw, "-num-proxies", "1", "-admin-token", adminToken, "-drop", "100",
					"-rates", "api.anon=3/min,100/day api.user=2/min,1000/day autocomplete.project.anon=2/min,100/day"}
				if store == "redis" {
					args = append(args, "-redis", "redis://"+srv.Addr+"/0")
				}
				// The portals share the Redis server: each counts callers
				// of its own.
				adminScript(t, start(t, args...), fmt.Sprintf("%s-%s", store, fw), 10+10*i)
			})
		}
	}
}

// adminScript proves each sentence of the contract of DELETE
// /admin/limits/SCOPE on portal p; tag and base keep its users and
// addresses apart from those of other portals on the same store.
func adminScript(t *testing.T, p *process, tag string, base int) {
	addr := func(n int) string { return fmt.Sprintf("192.0.2.%d", base+n) }
	from := func(a string) map[string]string { return map[string]string{"X-Forwarded-For": a} }
	records := func(h map[string]string) (*http.Response, string) {
		return p.send(t, http.MethodGet, "/api/records", h, "")
	}
	reset := func(path, token string) (*http.Response, string) {
		h := map[string]string{}
		if token != "" {
			h["X-Admin-Token"] = token
		}
		return p.send(t, http.MethodDelete, path, h, "")
	}
	requireJSONError := func(resp *http.Response, body string, status int) {
		t.Helper()
		require.Equal(t, status, resp.StatusCode, body)
		assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"), resp.Header.Get("Content-Type"))
		var e struct {
			Error *string `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		require.NotNil(t, e.Error, body)
		assert.NotEmpty(t, *e.Error)
	}

	// An anonymous caller at its limit.
	blocked, neighbour := addr(1), addr(2)
	for range 3 {
		resp, body := records(from(blocked))
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
	}
	resp, _ := records(from(neighbour))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = records(from(blocked))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	// A missing or wrong token is 403, and nothing changes.
	path := "/admin/limits/api?caller=" + blocked
	for _, token := range []string{"", "s3cret", adminToken + "x", strings.ToUpper(adminToken)} {
		resp, body := reset(path, token)
		requireJSONError(resp, body, http.StatusForbidden)
		resp, _ = records(from(blocked))
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "token %q changed nothing", token)
	}
	resp, body := reset("/admin/limits/nope?caller="+blocked, "")
	requireJSONError(resp, body, http.StatusForbidden)

	// The right token: 204, and the caller's next request shows the full
	// limit less one; another caller keeps its counts.
	resp, body = reset(path, adminToken)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	assert.Empty(t, body)
	resp, _ = records(from(blocked))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `"api.anon.min";r=2, "api.anon.day";r=99`, resp.Header.Get("RateLimit"))
	resp, _ = records(from(neighbour))
	assert.Regexp(t, `"api.anon.min";r=1(,|$)`, resp.Header.Get("RateLimit"), "another caller keeps its counts")

	// The admin route is not limited.
	for range 10 {
		resp, body := reset("/admin/limits/api?caller="+addr(3), adminToken)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	}

	// An IPv6 caller is counted, and reset, by its /64.
	v6 := fmt.Sprintf("2001:db8:%x::", base)
	for range 3 {
		records(from(v6 + "1"))
	}
	resp, _ = records(from(v6 + "2"))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "one /64, one count")
	resp, body = reset("/admin/limits/api?caller="+v6+"ffff:1", adminToken)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	resp, _ = records(from(v6 + "3"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Regexp(t, `"api.anon.min";r=2(,|$)`, resp.Header.Get("RateLimit"))

	// A signed-in user, by name.
	user := "alice-" + tag
	signedIn := map[string]string{"Authorization": "Bearer " + user, "X-Forwarded-For": blocked}
	for range 2 {
		records(signedIn)
	}
	resp, _ = records(signedIn)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	resp, body = reset("/admin/limits/api?user="+user, adminToken)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	resp, _ = records(signedIn)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Regexp(t, `"api.user.min";r=1(,|$)`, resp.Header.Get("RateLimit"))
	resp, _ = records(from(blocked))
	assert.Regexp(t, `"api.anon.min";r=1(,|$)`, resp.Header.Get("RateLimit"), "the address keeps its anonymous count")

	// A search box's scope, apart from the API's.
	search := func() *http.Response {
		resp, _ := p.send(t, http.MethodGet, "/autocomplete/project?q=soil", from(blocked), "")
		return resp
	}
	search()
	search()
	require.Equal(t, http.StatusTooManyRequests, search().StatusCode)
	resp, body = reset("/admin/limits/api?caller="+blocked, adminToken)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	require.Equal(t, http.StatusTooManyRequests, search().StatusCode, "a reset of api leaves the search box's counts")
	resp, body = reset("/admin/limits/autocomplete.project?caller="+blocked, adminToken)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	resp = search()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Regexp(t, `"autocomplete.project.anon.min";r=1(,|$)`, resp.Header.Get("RateLimit"))

	// The balance of /rpc (scope ledger): dropped, then reset.
	rpc := func() *http.Response {
		h := from(blocked)
		h["Content-Type"] = "application/json"
		resp, _ := p.send(t, http.MethodPost, "/rpc", h, `{"method":"path_find","params":[{}]}`)
		return resp
	}
	dropped := false
	for range 10 {
		if rpc().StatusCode == http.StatusServiceUnavailable {
			dropped = true
			break
		}
	}
	require.True(t, dropped, "dropped at a balance of 100")
	resp, body = reset("/admin/limits/ledger?caller="+blocked, adminToken)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	assert.Equal(t, http.StatusOK, rpc().StatusCode, "the balance is gone")

	// An unknown scope is 404; a bad address, neither or both of caller
	// and user are 400.
	resp, body = reset("/admin/limits/nope?caller="+blocked, adminToken)
	requireJSONError(resp, body, http.StatusNotFound)
	for _, q := range []string{"caller=192.0.2", "caller=", "caller=192.0.2.1:80", "user=", "", "caller=" + blocked + "&user=" + user, "who=" + blocked} {
		resp, body := reset("/admin/limits/api?"+q, adminToken)
		requireJSONError(resp, body, http.StatusBadRequest)
	}
}

// TestAdminRouteNeedsTheFlag checks that without -admin-token the route
// does not exist: each framework answers it as any unknown route.
func TestAdminRouteNeedsTheFlag(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=1/min,100/day")
			resp, _ := p.get(t, "/api/records", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp, _ = p.send(t, http.MethodDelete, "/admin/limits/api?caller=127.0.0.1", map[string]string{"X-Admin-Token": ""}, "")
			assert.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, resp.StatusCode)
			resp, _ = p.get(t, "/api/records", "")
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "nothing was reset")
		})
	}
}
