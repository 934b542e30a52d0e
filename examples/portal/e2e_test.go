package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/redistest"
)

// portalBin is the portal binary that TestMain builds.
var portalBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "portal-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	portalBin = filepath.Join(dir, "portal")
	build := exec.Command("go", "build", "-o", portalBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the portal:", err)
		return 1
	}
	return m.Run()
}

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// portalEnv is the environment of the portal processes: the test's, without
// REDIS_URL, so that counts are in memory.
func portalEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") {
			env = append(env, kv)
		}
	}
	return env
}

// process is a running portal.
type process struct {
	url    string
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed when the process has exited
}

// start runs the portal with args on a free loopback port and waits until
// /healthz answers. The process is stopped when the test ends.
func start(t *testing.T, args ...string) *process {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	p := &process{url: "http://" + addr, stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(portalBin, append([]string{"-addr", addr}, args...)...)
	p.cmd.Env = portalEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})

	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(p.url + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("portal %v exited before it was ready: %s\n%s", args, p.cmd.ProcessState, p.stderr)
		case <-deadline:
			t.Fatalf("portal %v not ready after 30s: %v\n%s", args, err, p.stderr)
		case <-tick.C:
		}
	}
}

// get sends GET path, signed in as user unless user is "".
func (p *process) get(t *testing.T, path, user string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.url+path, nil)
	require.NoError(t, err)
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp, body.Bytes()
}

var frameworks = []string{"gin", "echo"}

func TestLimits(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=3/min,100/day api.user=2/min,1000/day")

			for i := range 3 {
				resp, body := p.get(t, "/api/records", "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i+1, body)
				var got struct {
					Records []map[string]any `json:"records"`
				}
				require.NoError(t, json.Unmarshal(body, &got))
				assert.NotEmpty(t, got.Records)
				assert.Equal(t, `"api.anon.min";q=3;w=60, "api.anon.day";q=100;w=86400`, resp.Header.Get("RateLimit-Policy"))
				assert.Contains(t, resp.Header.Get("RateLimit"), `"api.anon.min";r=`+strconv.Itoa(2-i)+";t=")
				assert.Empty(t, resp.Header.Get("Retry-After"))
			}

			resp, body := p.get(t, "/api/records", "")
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			require.NoError(t, err, "Retry-After %q", resp.Header.Get("Retry-After"))
			assert.Positive(t, retry)
			assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"), resp.Header.Get("Content-Type"))
			var deny struct {
				Detail     *string `json:"detail"`
				RetryAfter *int    `json:"retry_after"`
			}
			require.NoError(t, json.Unmarshal(body, &deny), "%s", body)
			require.NotNil(t, deny.Detail, "%s", body)
			require.NotNil(t, deny.RetryAfter, "%s", body)
			assert.NotEmpty(t, *deny.Detail)
			assert.Equal(t, retry, *deny.RetryAfter)

			// Signed-in users are counted apart from the address, and
			// from each other, with the user limits.
			for range 2 {
				resp, _ = p.get(t, "/api/records", "alice")
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Contains(t, resp.Header.Get("RateLimit-Policy"), `"api.user.min";q=2;w=60`)
			}
			resp, _ = p.get(t, "/api/records", "alice")
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			resp, _ = p.get(t, "/api/records", "bob")
			assert.Equal(t, http.StatusOK, resp.StatusCode)

			// whoami and healthz are not limited.
			for range 5 {
				resp, body = p.get(t, "/api/whoami", "")
				require.Equal(t, http.StatusOK, resp.StatusCode)
				assert.JSONEq(t, `{"kind":"anon","id":"127.0.0.1"}`, string(body))
			}
			resp, body = p.get(t, "/api/whoami", "alice")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.JSONEq(t, `{"kind":"user","id":"alice"}`, string(body))
			resp, _ = p.get(t, "/healthz", "")
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

func TestAdmins(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.user=1/min,1000/day", "-admins", "root, ops")
			for range 5 {
				resp, _ := p.get(t, "/api/records", "root")
				require.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Empty(t, resp.Header.Get("RateLimit"), "an admin is not counted")
			}
			resp, _ := p.get(t, "/api/records", "ops")
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			resp, _ = p.get(t, "/api/records", "alice")
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			resp, _ = p.get(t, "/api/records", "alice")
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		})
	}
}

func TestStartupChecks(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			// The checks are logged before the portal listens, so they
			// are in stderr once it is ready.
			unset := start(t, "-framework", fw)
			assert.Contains(t, unset.stderr.String(), "W601")
			none := start(t, "-framework", fw, "-num-proxies", "0")
			assert.NotContains(t, none.stderr.String(), "W601")
		})
	}
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0")
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("portal still running 30s after SIGTERM:\n%s", p.stderr)
			}
			assert.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "%s", p.stderr)
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // in the message on stderr
	}{
		{name: "no equals sign", args: []string{"-rates", "api.anon"}, want: `"api.anon"`},
		{name: "empty rate", args: []string{"-rates", "api.anon=3/min api.user="}, want: `"api.user="`},
		{name: "empty key", args: []string{"-rates", "=3/min"}, want: `"=3/min"`},
		{name: "unknown scope", args: []string{"-rates", "api.anon=3/min,100/day nope.anon=1/min"}, want: `"nope.anon"`},
		{name: "unknown kind", args: []string{"-rates", "api.admin=1/min"}, want: `"api.admin"`},
		{name: "bad rate", args: []string{"-rates", "api.anon=3/fortnight"}, want: `"3/fortnight"`},
		{name: "bad framework", args: []string{"-framework", "chi"}, want: `"chi"`},
		{name: "bad proxies", args: []string{"-num-proxies", "-1"}, want: "-num-proxies"},
	}
	for _, tt := range tests {
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

// TestRedis runs the portal on Gin and on Echo against one Redis: they
// share the counts.
func TestRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	args := []string{"-num-proxies", "0", "-rates", "api.anon=3/min,100/day", "-redis", "redis://" + srv.Addr + "/0"}
	g := start(t, append([]string{"-framework", "gin"}, args...)...)
	e := start(t, append([]string{"-framework", "echo"}, args...)...)
	assert.Contains(t, g.stderr.String(), "store=redis")

	for _, p := range []*process{g, e, g} {
		resp, body := p.get(t, "/api/records", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	}
	resp, _ := e.get(t, "/api/records", "")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
}
