package consumertest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"

	"github.com/ratescope/ratescope/internal/consumertest"
)

// A quickStart is a Go snippet of README.md built into a program of its
// own.
type quickStart struct {
	name    string // the program's directory
	heading string // the README heading the snippet is the first Go block under
	echo    string // the import path of "echo", if the snippet uses it
	prelude string // code before the snippet
	handler string // the http.Handler the snippet builds
	limited string // the path limited at 60/min for an anonymous caller
	metrics bool   // GET /metrics counts the refusal
	otel    bool   // the OpenTelemetry SDK writes the refusal to standard output
}

var quickStarts = []quickStart{
	{name: "gin", heading: "Quick start: Gin", handler: "r", limited: "/api/records"},
	{name: "echo4", heading: "Quick start: Echo v4", echo: "github.com/labstack/echo/v4", handler: "e", limited: "/api/records"},
	{name: "echo5", heading: "Quick start: Echo v5", echo: "github.com/labstack/echo/v5", handler: "e", limited: "/api/records"},
	{name: "metrics", heading: "Seeing every decision: metrics", handler: "r", limited: "/api/records", metrics: true},
	{name: "otel", heading: "Seeing every decision: OpenTelemetry", handler: "r", limited: "/api/records", otel: true},
}

// imports are the packages a snippet may name, by the name it uses.
var imports = map[string]string{
	"context":      "context",
	"fmt":          "fmt",
	"log":          "log",
	"net":          "net",
	"http":         "net/http",
	"slog":         "log/slog",
	"strings":      "strings",
	"core":         "github.com/ratescope/ratescope/core",
	"memstore":     "github.com/ratescope/ratescope/core/memstore",
	"checks":       "github.com/ratescope/ratescope/checks",
	"ginlimit":     "github.com/ratescope/ratescope/ginlimit",
	"echolimit":    "github.com/ratescope/ratescope/echolimit",
	"echo5limit":   "github.com/ratescope/ratescope/echo5limit",
	"rsprom":       "github.com/ratescope/ratescope/prometheus",
	"rsotel":       "github.com/ratescope/ratescope/otel",
	"gin":          "github.com/gin-gonic/gin",
	"prometheus":   "github.com/prometheus/client_golang/prometheus",
	"promhttp":     "github.com/prometheus/client_golang/prometheus/promhttp",
	"sdkmetric":    "go.opentelemetry.io/otel/sdk/metric",
	"stdoutmetric": "go.opentelemetry.io/otel/exporters/stdout/stdoutmetric",
}

// aliases are the imports a snippet names other than by their last
// element.
var aliases = map[string]bool{"rsprom": true, "rsotel": true, "sdkmetric": true}

// TestQuickStarts gets every ratescope module at the version the nested
// modules require, from a module proxy written from the working tree
// alone, into a fresh module outside the repository (GOWORK=off, no
// replace, -mod=mod, its own module cache), and builds and runs the
// README's quick starts for Gin, Echo v4, Echo v5, the Prometheus metrics
// and OpenTelemetry: each answers 200 sixty times, then 429, and the
// refusal is counted in the metrics.
func TestQuickStarts(t *testing.T) {
	started := time.Now()
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	version := releasedVersion(t, repo)
	t.Logf("version %s", version)

	proxy := t.TempDir()
	require.NoError(t, consumertest.WriteProxy(proxy, repo, version, consumertest.Modules))
	env := consumerEnv(t, proxy)

	work := t.TempDir()
	require.False(t, strings.HasPrefix(work, repo+string(filepath.Separator)), "the consumer module is outside the repository")
	require.NoError(t, os.WriteFile(filepath.Join(work, "go.mod"), []byte("module example.com/consumer\n\ngo 1.26.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "go.sum"), knownSums(t, repo), 0o644))
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	require.NoError(t, err)
	for _, q := range quickStarts {
		src := program(t, q, string(readme))
		dir := filepath.Join(work, q.name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	}

	run(t, work, env, "go", "get",
		"github.com/ratescope/ratescope@"+version,
		"github.com/ratescope/ratescope/prometheus@"+version,
		"github.com/ratescope/ratescope/otel@"+version,
		"github.com/ratescope/ratescope/echo5limit@"+version)
	bin := filepath.Join(work, "bin")
	// -trimpath keeps the module cache's path, new on every run, out of
	// the build cache's keys: the third-party packages compiled by an
	// earlier run are reused.
	run(t, work, env, "go", "build", "-trimpath", "-o", bin+string(filepath.Separator), "./...")
	gomod := run(t, work, env, "go", "list", "-m", "github.com/ratescope/ratescope", "github.com/ratescope/ratescope/prometheus", "github.com/ratescope/ratescope/otel")
	assert.Equal(t, fmt.Sprintf("github.com/ratescope/ratescope %s\ngithub.com/ratescope/ratescope/prometheus %s\ngithub.com/ratescope/ratescope/otel %s\n", version, version, version), gomod)
	t.Logf("proxy, go get and go build: %s", time.Since(started).Round(time.Millisecond))

	for _, q := range quickStarts {
		t.Run(q.name, func(t *testing.T) {
			progEnv := env
			if q.otel {
				// The periodic reader exports every 100 ms instead of
				// every minute.
				progEnv = append(append([]string(nil), env...), "OTEL_METRIC_EXPORT_INTERVAL=100")
			}
			base, stdout := serve(t, filepath.Join(bin, q.name), progEnv)
			for i := range 60 {
				require.Equal(t, http.StatusOK, get(t, base+q.limited).StatusCode, "request %d", i+1)
			}
			resp := get(t, base+q.limited)
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			assert.Equal(t, "60", resp.Header.Get("Retry-After"))
			if q.metrics {
				body, err := io.ReadAll(get(t, base+"/metrics").Body)
				require.NoError(t, err)
				assert.Contains(t, string(body), `ratescope_decisions_total{kind="anon",outcome="denied",scope="api"} 1`)
				assert.Contains(t, string(body), `ratescope_decisions_total{kind="anon",outcome="allowed",scope="api"} 60`)
			}
			if q.otel {
				// stdoutmetric writes each export as one line of JSON: the
				// refusal is in one within a few exports.
				require.Eventually(t, func() bool {
					return strings.Contains(stdout.String(), `{"Key":"ratescope.outcome","Value":{"Type":"STRING","Value":"denied"}}`)
				}, time.Minute, 50*time.Millisecond, "no export of ratescope.decisions with a refusal on standard output:\n%s", stdout.String())
				assert.Contains(t, stdout.String(), `"Name":"ratescope.decisions"`)
				assert.Contains(t, stdout.String(), `"Name":"ratescope.decision.duration"`)
			}
		})
	}
	t.Logf("total: %s", time.Since(started).Round(time.Millisecond))
}

// releasedVersion returns the version of the root module that every
// nested module requires: the version the modules are at, which
// scripts/release.sh sets.
func releasedVersion(t *testing.T, repo string) string {
	t.Helper()
	name := filepath.Join(repo, "prometheus", "go.mod")
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	f, err := modfile.Parse(name, data, nil)
	require.NoError(t, err)
	for _, r := range f.Require {
		if r.Mod.Path == consumertest.Modules[0].Path {
			require.Regexp(t, `^v\d+\.\d+\.\d+$`, r.Mod.Version, "prometheus/go.mod requires a released version of the root module")
			return r.Mod.Version
		}
	}
	t.Fatalf("%s does not require %s", name, consumertest.Modules[0].Path)
	return ""
}

// knownSums returns the go.sum lines of the published modules: the
// checksums of every third-party module a user of them may need, which
// the checksum database vouched for when they entered the repository. With
// them the fresh module verifies what it downloads without asking the
// checksum database again over the network (ratescope's own modules have
// no line: they are not published, GONOSUMDB names them).
func knownSums(t *testing.T, repo string) []byte {
	t.Helper()
	seen := map[string]bool{}
	var lines []string
	for _, m := range consumertest.Modules {
		data, err := os.ReadFile(filepath.Join(repo, m.Dir, "go.sum"))
		require.NoError(t, err)
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" && !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

// consumerEnv is the environment of a stranger's module: no workspace,
// a module cache of its own, ratescope's modules from the proxy alone and
// not looked up in the checksum database (they are not published), the
// third-party modules from the module cache of this machine, else from the
// module proxy it is configured with.
func consumerEnv(t *testing.T, proxy string) []string {
	t.Helper()
	shared := strings.TrimSpace(run(t, "", os.Environ(), "go", "env", "GOMODCACHE"))
	upstream := strings.TrimSpace(run(t, "", os.Environ(), "go", "env", "GOPROXY"))
	proxies := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(shared, "cache", "download"))
	// The configured proxies, without "direct": a module path that is
	// not ratescope's and no proxy has (go get asks for every prefix of a
	// package path, such as .../echo5limit) must fail, not clone a
	// repository from the network.
	for _, p := range strings.FieldsFunc(upstream, func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" {
			proxies += "," + p
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOWORK", "GOFLAGS", "GOPROXY", "GOMODCACHE", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOTOOLCHAIN", "GIN_MODE", "GIT_TERMINAL_PROMPT":
		default:
			env = append(env, kv)
		}
	}
	return append(env,
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw",
		"GOPROXY="+proxies,
		"GOMODCACHE="+t.TempDir(),
		"GONOSUMDB=github.com/ratescope/ratescope",
		"GOTOOLCHAIN=local",
		"GIN_MODE=release",
		"GIT_TERMINAL_PROMPT=0",
	)
}

// program returns the source of the quick start q: its README snippet in
// a main function, the imports it names, and a server on a free port.
func program(t *testing.T, q quickStart, readme string) string {
	t.Helper()
	snippet := firstGoBlock(t, readme, q.heading)
	body := q.prelude + snippet + "\nserve(" + q.handler + ")\n"
	names := map[string]bool{"log": true, "net": true, "fmt": true, "http": true} // serve's
	for _, m := range regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z]`).FindAllStringSubmatch(body, -1) {
		names[m[1]] = true
	}
	var lines []string
	for name := range names {
		p, ok := imports[name]
		if name == "echo" {
			p, ok = q.echo, q.echo != ""
		}
		if !ok {
			continue // a variable, such as lim or c
		}
		if aliases[name] {
			p = name + " " + fmt.Sprintf("%q", p)
		} else {
			p = fmt.Sprintf("%q", p)
		}
		lines = append(lines, "\t"+p)
	}
	sort.Strings(lines)
	return "package main\n\nimport (\n" + strings.Join(lines, "\n") + "\n)\n\nfunc main() {\n" + body + `}

// serve serves h on a free loopback port and says which.
func serve(h http.Handler) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening", ln.Addr())
	log.Fatal(http.Serve(ln, h))
}
`
}

// firstGoBlock returns the first fenced Go block after the heading.
func firstGoBlock(t *testing.T, readme, heading string) string {
	t.Helper()
	i := strings.Index(readme, "\n## "+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "README has no heading %q", heading)
	rest := readme[i:]
	start := strings.Index(rest, "\n```go\n")
	require.GreaterOrEqual(t, start, 0, "no Go block under %q", heading)
	rest = rest[start+len("\n```go\n"):]
	end := strings.Index(rest, "\n```")
	require.GreaterOrEqual(t, end, 0)
	return rest[:end+1]
}

// run runs a command in dir and returns its standard output, or fails the
// test with everything it wrote; a command still running after forty
// minutes (a network that does not answer) is killed.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s:\n%s%s", name, strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// output is what a program wrote to its standard output so far.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.WriteString(line)
	o.b.WriteByte('\n')
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// serve starts the program bin, waits for the address it listens on, and
// returns its base URL and its standard output, which keeps growing; the
// program is killed when the test ends.
func serve(t *testing.T, bin string, env []string) (string, *output) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = env
	var stderr strings.Builder // read only after Wait
	cmd.Stderr = &stderr
	// Standard output goes through a pipe of our own, read to its end, so
	// that Wait can wait for it to be copied.
	stdout, w := io.Pipe()
	cmd.Stdout = w
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		_ = w.Close()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(bin), stderr.String())
		}
	})
	addr := make(chan string, 1)
	out := new(output)
	go func() {
		defer close(addr)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20) // an export of the SDK is one long line
		for sc.Scan() {
			out.add(sc.Text())
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		require.NotEmpty(t, a, "%s exited without saying where it listens (its stderr follows)", filepath.Base(bin))
		return "http://" + a, out
	case <-time.After(time.Minute):
		t.Fatalf("%s did not say where it listens", filepath.Base(bin))
		return "", nil
	}
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
