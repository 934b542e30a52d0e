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

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// portalBin is the portal binary that TestMain builds.
var portalBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Getenv(burnEnv) != "" {
		burn()
	}
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
	h := map[string]string{}
	if user != "" {
		h["Authorization"] = "Bearer " + user
	}
	return p.getWith(t, path, h)
}

// getWith sends GET path with the given headers.
func (p *process) getWith(t *testing.T, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.url+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp, body.Bytes()
}

var frameworks = []string{"gin", "echo", "echo5"}

func TestLimits(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=3/minutes,100/days api.user=2/min,1000/day")

			for i := range 3 {
				resp, body := p.get(t, "/api/records", "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i+1, body)
				var got struct {
					Records []map[string]any `json:"records"`
				}
				require.NoError(t, json.Unmarshal(body, &got))
				assert.NotEmpty(t, got.Records)
				assert.Equal(t, `"api.anon.min";q=3;w=60, "api.anon.day";q=100;w=86400`, resp.Header.Get("RateLimit-Policy"))
				assert.Regexp(t, `"api.anon.min";r=`+strconv.Itoa(2-i)+"(,|$)", resp.Header.Get("RateLimit"))
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
		{name: "search box typo", args: []string{"-rates", "autocomplete.projekt.anon=1/min"}, want: `"autocomplete.projekt.anon"`},
		{name: "search box unknown kind", args: []string{"-rates", "autocomplete.project.admin=1/min"}, want: `"autocomplete.project.admin"`},
		{name: "search box bad rate", args: []string{"-rates", "autocomplete.tag.user=5/fortnight"}, want: `"5/fortnight"`},
		{name: "bad framework", args: []string{"-framework", "chi"}, want: `"chi"`},
		{name: "bad proxies", args: []string{"-num-proxies", "-1"}, want: "-num-proxies"},
		{name: "negative warn", args: []string{"-warn", "-5"}, want: "Warn -5"},
		{name: "bad drop", args: []string{"-drop", "many"}, want: "-drop"},
		// A warning above the drop would drop callers never warned: it
		// started silently before issue 34.
		{name: "warn above drop", args: []string{"-warn", "20000", "-drop", "100"}, want: "-warn 20000, -drop 100: balance: invalid config: Warn 20000 is above Drop 100"},
		{name: "bad trusted proxies", args: []string{"-trusted-proxies", "10.0.0.0/8,nope"}, want: `"nope"`},
		{name: "bad export cost", args: []string{"-export-cost", "0"}, want: "-export-cost"},
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

// TestRedis runs the portal on Gin, Echo v4 and Echo v5 against one
// Redis: they share the counts.
func TestRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	args := []string{"-num-proxies", "0", "-rates", "api.anon=3/min,100/day", "-redis", "redis://" + srv.Addr + "/0"}
	g := start(t, append([]string{"-framework", "gin"}, args...)...)
	e := start(t, append([]string{"-framework", "echo"}, args...)...)
	e5 := start(t, append([]string{"-framework", "echo5"}, args...)...)
	assert.Contains(t, g.stderr.String(), "store=redis")

	for _, p := range []*process{g, e, e5} {
		resp, body := p.get(t, "/api/records", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	}
	for _, p := range []*process{g, e, e5} {
		resp, _ := p.get(t, "/api/records", "")
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	}
}

// searches returns the body of GET /debug/searches: how many searches each
// search box ran.
func (p *process) searches(t *testing.T) map[string]int64 {
	t.Helper()
	resp, body := p.get(t, "/debug/searches", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var got map[string]int64
	require.NoError(t, json.Unmarshal(body, &got), "%s", body)
	return got
}

// searchCounts returns counts with every search box, at 0 unless counts
// names it: what /debug/searches answers.
func searchCounts(counts map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, name := range portal.SearchBoxes() {
		out[name] = counts[name]
	}
	return out
}

// searchResults decodes the body of a search, requiring the
// {"results": [...]} shape.
func searchResults(t *testing.T, body []byte) []autocomplete.Result {
	t.Helper()
	var got struct {
		Results *[]autocomplete.Result `json:"results"`
	}
	require.NoError(t, json.Unmarshal(body, &got), "%s", body)
	require.NotNil(t, got.Results, "no results field: %s", body)
	return *got.Results
}

// requireRefusedSearch checks that resp is a search refused over a limit:
// 429, Retry-After, and {"results": []}.
func requireRefusedSearch(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", resp.Header.Get("Retry-After"))
	assert.Positive(t, retry)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"), resp.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"results":[]}`, string(body))
}

func TestSearchBoxLimits(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-admins", "root",
				"-rates", "autocomplete.project.anon=3/min,100/day autocomplete.project.user=2/min,1000/day api.anon=2/min,100/day")
			assert.Equal(t, searchCounts(nil), p.searches(t))

			// Three searches are served, with results; the fourth is
			// refused, and nothing is searched for it.
			for i, q := range []string{"", "GLACIER", "an"} {
				resp, body := p.get(t, "/autocomplete/project?q="+q, "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "search %d: %s", i+1, body)
				assert.NotEmpty(t, searchResults(t, body), "search %d", i+1)
				assert.Equal(t, `"autocomplete.project.anon.min";q=3;w=60, "autocomplete.project.anon.day";q=100;w=86400`, resp.Header.Get("RateLimit-Policy"))
				assert.Regexp(t, `"autocomplete.project.anon.min";r=`+strconv.Itoa(2-i)+"(,|$)", resp.Header.Get("RateLimit"))
				assert.Empty(t, resp.Header.Get("Retry-After"))
			}
			resp, body := p.get(t, "/autocomplete/project?q=glacier", "")
			requireRefusedSearch(t, resp, body)
			assert.Equal(t, searchCounts(map[string]int64{"project": 3}), p.searches(t))

			// An exhausted search box leaves the API its own allowance.
			for i := range 2 {
				resp, body = p.get(t, "/api/records", "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i+1, body)
			}
			resp, _ = p.get(t, "/api/records", "")
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

			// An exhausted API leaves the search boxes theirs: another
			// box serves, with its starting values, and the exhausted one
			// is still refused, not reset.
			resp, body = p.get(t, "/autocomplete/dataset?q=glacier", "")
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.JSONEq(t, `{"results":[{"id":"dataset-04","label":"Glacier stake measurements"}]}`, string(body))
			assert.Equal(t, `"autocomplete.dataset.anon.min";q=60;w=60, "autocomplete.dataset.anon.day";q=2000;w=86400`, resp.Header.Get("RateLimit-Policy"))
			resp, body = p.get(t, "/autocomplete/project", "")
			requireRefusedSearch(t, resp, body)

			// Signed-in users are counted apart from the address, and
			// from each other, with the user limits.
			for i := range 2 {
				resp, body = p.get(t, "/autocomplete/project?q=soil", "alice")
				require.Equal(t, http.StatusOK, resp.StatusCode, "alice's search %d: %s", i+1, body)
				assert.JSONEq(t, `{"results":[{"id":"project-10","label":"Soil microbiome atlas"}]}`, string(body))
				assert.Equal(t, `"autocomplete.project.user.min";q=2;w=60, "autocomplete.project.user.day";q=1000;w=86400`, resp.Header.Get("RateLimit-Policy"))
			}
			resp, body = p.get(t, "/autocomplete/project?q=soil", "alice")
			requireRefusedSearch(t, resp, body)
			resp, body = p.get(t, "/autocomplete/project?q=soil", "bob")
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.NotEmpty(t, searchResults(t, body))

			// Admins are not counted.
			for range 5 {
				resp, body = p.get(t, "/autocomplete/project", "root")
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
				assert.Empty(t, resp.Header.Get("RateLimit"), "an admin is not counted")
			}

			// A search box that does not exist.
			resp, _ = p.get(t, "/autocomplete/projekt?q=a", "")
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)

			// Only the searches served ran: 3 anonymous, alice's 2, bob's
			// 1 and root's 5 in the project box; 1 in the dataset box.
			assert.Equal(t, searchCounts(map[string]int64{"project": 11, "dataset": 1}), p.searches(t))
		})
	}
}

func TestSearchBoxStartingValues(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			// -rates names only the API: the search boxes keep their
			// starting values, 60/min and 2000/day anonymous, 240/min and
			// 10000/day signed in.
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=1/min,10/day")
			resp, _ := p.get(t, "/api/records", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp, _ = p.get(t, "/api/records", "")
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "-rates was not applied")

			for _, name := range portal.SearchBoxes() {
				resp, body := p.get(t, "/autocomplete/"+name, "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", name, body)
				assert.NotEmpty(t, searchResults(t, body), name)
				assert.Equal(t, fmt.Sprintf(`"autocomplete.%[1]s.anon.min";q=60;w=60, "autocomplete.%[1]s.anon.day";q=2000;w=86400`, name),
					resp.Header.Get("RateLimit-Policy"), name)
			}
			resp, _ = p.get(t, "/autocomplete/tag", "alice")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, `"autocomplete.tag.user.min";q=240;w=60, "autocomplete.tag.user.day";q=10000;w=86400`, resp.Header.Get("RateLimit-Policy"))

			// The project box allows 60 a minute: 59 more, then a refusal.
			for i := 2; i <= 60; i++ {
				resp, body := p.get(t, "/autocomplete/project?q=a", "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "search %d: %s", i, body)
			}
			resp, body := p.get(t, "/autocomplete/project?q=a", "")
			requireRefusedSearch(t, resp, body)

			want := searchCounts(nil)
			for name := range want {
				want[name] = 1
			}
			want["project"], want["tag"] = 60, 2
			assert.Equal(t, want, p.searches(t))
		})
	}
}

// metrics scrapes GET /metrics and returns the samples by series, such as
// `ratescope_decisions_total{scope="api",kind="anon",outcome="allowed"}`.
func (p *process) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, body := p.get(t, "/metrics", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4"), resp.Header.Get("Content-Type"))
	assert.Empty(t, resp.Header.Get("RateLimit"), "/metrics is not limited")
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, "sample line %q", line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, "sample line %q", line)
		out[line[:i]] = v
	}
	return out
}

func decisions(scope, kind, outcome string) string {
	return `ratescope_decisions_total{scope="` + scope + `",kind="` + kind + `",outcome="` + outcome + `"}`
}

// startMetrics starts the portal on fw with the flags metrics (-metrics
// alone, or -metrics otel), -admins root and api.anon=2/min, and sends what the
// metrics tests count: three anonymous requests (2 allowed, 1 denied), one
// of root (exempt) and one of alice (allowed); then it scrapes /metrics
// three times with scrape, which counts nothing (/metrics is not limited,
// so never refused).
func startMetrics(t *testing.T, fw string, scrape func(*process), metrics ...string) *process {
	t.Helper()
	args := append([]string{"-framework", fw, "-num-proxies", "0"}, metrics...)
	p := start(t, append(args, "-admins", "root", "-rates", "api.anon=2/min,100/day")...)
	for range 3 {
		p.get(t, "/api/records", "")
	}
	p.get(t, "/api/records", "root")
	p.get(t, "/api/records", "alice")
	for range 3 {
		scrape(p)
	}
	return p
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := startMetrics(t, fw, func(p *process) { p.metrics(t) }, "-metrics")
			m := p.metrics(t)
			for series, want := range map[string]float64{
				decisions("api", "anon", "allowed"):                  2,
				decisions("api", "anon", "denied"):                   1,
				decisions("api", "user", "exempt"):                   1,
				decisions("api", "user", "allowed"):                  1,
				decisions("api", "anon", "failed_open"):              0,
				decisions("api", "anon", "shadow"):                   0,
				decisions("autocomplete.project", "anon", "allowed"): 0,
				decisions("ledger", "anon", "allowed"):               0, // the balance scope too, as the reference says
				"ratescope_store_failures_total":                     0,
			} {
				got, ok := m[series]
				assert.True(t, ok, "series %s is exposed", series)
				assert.Equal(t, want, got, series)
			}
		})
	}
	p := start(t, "-num-proxies", "0")
	resp, _ := p.get(t, "/metrics", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "without -metrics")
}

// otelDecisions GETs /metrics of a portal started with -metrics otel and
// returns the data points of ratescope.decisions by their attributes
// (scope kind outcome), and the names of every instrument.
func (p *process) otelDecisions(t *testing.T) (map[string]int64, []string) {
	t.Helper()
	resp, body := p.get(t, "/metrics", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Empty(t, resp.Header.Get("RateLimit"), "/metrics is not limited")
	var rm struct {
		ScopeMetrics []struct {
			Scope   struct{ Name string }
			Metrics []struct {
				Name, Unit string
				Data       struct {
					DataPoints []struct {
						Attributes []struct {
							Key   string
							Value struct{ Value any }
						}
						Value any
					}
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(body, &rm), "%s", body)
	require.Len(t, rm.ScopeMetrics, 1, "%s", body)
	assert.Equal(t, "github.com/ratescope/ratescope/otel", rm.ScopeMetrics[0].Scope.Name)
	out := map[string]int64{}
	var names []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		names = append(names, m.Name)
		if m.Name != "ratescope.decisions" {
			continue
		}
		assert.Equal(t, "{decision}", m.Unit)
		for _, dp := range m.Data.DataPoints {
			attrs := map[string]string{}
			for _, a := range dp.Attributes {
				attrs[a.Key] = fmt.Sprint(a.Value.Value)
			}
			out[attrs["scope"]+" "+attrs["kind"]+" "+attrs["outcome"]] = int64(dp.Value.(float64))
		}
	}
	return out, names
}

// -metrics otel records through the otel module into an OpenTelemetry SDK
// and answers GET /metrics with what its reader collects, as JSON.
func TestOTelMetrics(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := startMetrics(t, fw, func(p *process) { p.otelDecisions(t) }, "-metrics", "otel")
			got, names := p.otelDecisions(t)
			assert.Equal(t, map[string]int64{
				"api anon allowed": 2,
				"api anon denied":  1,
				"api user exempt":  1,
				"api user allowed": 1,
			}, got)
			for _, name := range []string{"ratescope.decisions", "ratescope.decision.cost", "ratescope.decision.duration", "ratescope.store.failures", "ratescope.store.evictions"} {
				assert.Contains(t, names, name)
			}
		})
	}
}

func TestShadow(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-shadow", "-metrics", "-rates", "api.anon=2/min,100/day")
			for i := range 6 {
				resp, body := p.get(t, "/api/records", "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: shadow mode serves everyone: %s", i+1, body)
				assert.Regexp(t, `"api.anon.min";r=`+strconv.Itoa(max(1-i, 0))+`(;t=[0-9]+)?(,|$)`, resp.Header.Get("RateLimit"), "request %d", i+1)
				assert.Empty(t, resp.Header.Get("Retry-After"))
			}
			m := p.metrics(t)
			assert.Equal(t, 2.0, m[decisions("api", "anon", "allowed")])
			assert.Equal(t, 4.0, m[decisions("api", "anon", "shadow")])
			assert.Equal(t, 0.0, m[decisions("api", "anon", "denied")])
			assert.Contains(t, p.stderr.String(), "shadow mode served a request over the limit", "logged")
			assert.Contains(t, p.stderr.String(), "W610", "the startup checks say shadow mode is on")
		})
	}
}

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			// The test client, at 127.0.0.1, is not a trusted proxy: what
			// it writes in X-Forwarded-For is ignored.
			direct := start(t, "-framework", fw, "-trusted-proxies", "10.0.0.0/8", "-num-proxies", "1", "-rates", "api.anon=3/min,100/day")
			served := 0
			for i := range 50 {
				resp, _ := direct.getWith(t, "/api/records", map[string]string{"X-Forwarded-For": "198.51.100." + strconv.Itoa(i)})
				if resp.StatusCode == http.StatusOK {
					served++
				}
			}
			assert.Equal(t, 3, served, "one caller, whatever the forged header says")
			_, body := direct.getWith(t, "/api/whoami", map[string]string{"X-Forwarded-For": "198.51.100.7"})
			assert.JSONEq(t, `{"kind":"anon","id":"127.0.0.1"}`, string(body))

			// From inside the networks, the header is read.
			proxied := start(t, "-framework", fw, "-trusted-proxies", "127.0.0.0/8")
			_, body = proxied.getWith(t, "/api/whoami", map[string]string{"X-Forwarded-For": "6.6.6.6, 198.51.100.7"})
			assert.JSONEq(t, `{"kind":"anon","id":"198.51.100.7"}`, string(body))
			assert.NotContains(t, proxied.stderr.String(), "W601", "trusted proxies are a proxy setting")
		})
	}
}

func TestExportCost(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=10/min,100/day")
			resp, body := p.get(t, "/api/export", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var got struct {
				Records []map[string]any `json:"records"`
			}
			require.NoError(t, json.Unmarshal(body, &got))
			assert.NotEmpty(t, got.Records)
			assert.Regexp(t, `"api.anon.min";r=5(,|$)`, resp.Header.Get("RateLimit"), "counted once, at cost 5")
			resp, _ = p.get(t, "/api/records", "")
			assert.Regexp(t, `"api.anon.min";r=4(,|$)`, resp.Header.Get("RateLimit"), "the group's other route costs 1")
			resp, _ = p.get(t, "/api/export", "")
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "4 left, 5 needed")

			cheap := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=10/min,100/day", "-export-cost", "3")
			resp, _ = cheap.get(t, "/api/export", "")
			assert.Regexp(t, `"api.anon.min";r=7(,|$)`, resp.Header.Get("RateLimit"))

			// A limit below the cost: the portal starts, and the cost is
			// clamped to the limit.
			clamped := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=3/min,100/day")
			resp, _ = clamped.get(t, "/api/export", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Regexp(t, `"api.anon.min";r=0(,|$)`, resp.Header.Get("RateLimit"))
			assert.Contains(t, clamped.stderr.String(), "cost above the smallest limit; clamped")
		})
	}
}
