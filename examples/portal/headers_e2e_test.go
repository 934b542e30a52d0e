package main_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeaderPolicy runs the portal with each -headers value on every
// framework: the RateLimit fields on every response, on the refusal only,
// or on none, the 429 always with Retry-After; the balance's warning field
// on /rpc under "all" only, its "warning":"load" in the body always.
func TestHeaderPolicy(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		for _, tc := range []struct {
			mode           string
			served, denied bool // whether the served and refused responses carry RateLimit
		}{
			{mode: "all", served: true, denied: true},
			{mode: "refused", denied: true},
			{mode: "none"},
		} {
			t.Run(fw+"/"+tc.mode, func(t *testing.T) {
				t.Parallel()
				p := start(t, "-framework", fw, "-num-proxies", "0", "-headers", tc.mode,
					"-rates", "api.anon=2/min,100/day", "-warn", "1000", "-drop", "1000000")
				for i := range 2 {
					resp, body := p.get(t, "/api/records", "")
					require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i+1, body)
					assert.Equal(t, tc.served, resp.Header.Get("RateLimit") != "", "request %d: RateLimit %q", i+1, resp.Header.Get("RateLimit"))
					assert.Equal(t, tc.served, resp.Header.Get("RateLimit-Policy") != "", "request %d", i+1)
					assert.Empty(t, resp.Header.Get("Retry-After"))
				}
				resp, body := p.get(t, "/api/records", "")
				require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
				assert.NotEmpty(t, resp.Header.Get("Retry-After"), "a 429 carries Retry-After under every policy")
				assert.Contains(t, string(body), `"retry_after"`)
				assert.Equal(t, tc.denied, resp.Header.Get("RateLimit") != "", "refused: RateLimit %q", resp.Header.Get("RateLimit"))
				assert.Equal(t, tc.denied, resp.Header.Get("RateLimit-Policy") == `"api.anon.min";q=2;w=60, "api.anon.day";q=100;w=86400`, "refused")

				for i := 0; ; i++ {
					require.Less(t, i, 200, "never warned")
					resp, rbody := p.rpc(t, "", `{"method":"ripple_path_find","params":[{}]}`)
					require.Equal(t, http.StatusOK, resp.StatusCode, rbody)
					if strings.Contains(rbody, "warning") {
						assert.JSONEq(t, `{"result":{"status":"success","warning":"load"}}`, rbody)
						assert.Equal(t, tc.mode == "all", resp.Header.Get("Ratescope-Warning") == "load", "the warning field under -headers %s", tc.mode)
						break
					}
				}
			})
		}
	}
}

// TestHeaderPolicyInvalid checks that a bad -headers value is a usage
// error (exit status 2) that names it.
func TestHeaderPolicyInvalid(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, portalBin, "-addr", "127.0.0.1:0", "-headers", "sometimes")
	cmd.Env = portalEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "want an exit status, got %v; stderr:\n%s", err, &stderr)
	assert.Equal(t, 2, exit.ExitCode(), "%s", &stderr)
	assert.Contains(t, stderr.String(), `"sometimes"`)
	assert.Contains(t, stderr.String(), "-headers")
}
