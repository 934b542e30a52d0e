package consumertest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
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
// own: a whole program, built as written, or a fragment that the test
// puts in a main function.
type quickStart struct {
	name    string // the program's directory
	heading string // the heading the snippet is the first Go block under
	// whole programs are in docs/quick-starts.md, the others in README.md
	whole   bool   // the snippet is a whole program, serving on :$PORT
	prelude string // for a fragment: code before the snippet
	handler string // for a fragment: the http.Handler the snippet builds
	limited string // the path limited at 60/min for an anonymous caller
	metrics bool   // GET /metrics counts the refusal
	otel    bool   // the OpenTelemetry SDK writes the refusal to standard output
	// contentType is the Content-Type of the refusal, when it is not the
	// README's sample's (which is Gin's); the body then ends with a
	// newline that the sample's has not.
	contentType string
	// agrees: the program logs no W612 (the framework and ratescope
	// agree on the client's address).
	agrees bool
}

var quickStarts = []quickStart{
	{name: "gin", heading: "Quick start: Gin", whole: true, limited: "/api/records", agrees: true},
	{name: "echo4", heading: "Quick start: Echo v4", whole: true, limited: "/api/records", contentType: "application/json"},
	{name: "echo5", heading: "Quick start: Echo v5", whole: true, limited: "/api/records", contentType: "application/json"},
	{name: "http", heading: "Quick start: net/http", whole: true, limited: "/api/records"},
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
// replace, -mod=mod, its own module cache), as the README's commands do
// (go get, go mod tidy), and builds and runs the README's quick starts for
// Gin, Echo v4 and Echo v5, whole programs built as written, the
// Prometheus metrics and OpenTelemetry: each answers 200 sixty times, then
// the refusal the README shows, line for line, and the refusal is counted
// in the metrics.
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
	for _, cmd := range []string{
		"go get github.com/ratescope/ratescope@" + version,
		"go get github.com/ratescope/ratescope/prometheus@" + version,
		"go mod tidy",
		"go run .",
	} {
		assert.Contains(t, string(readme), "\n"+cmd, "the README's commands")
	}
	refusal := sampleRefusal(t, string(readme))
	programs, err := os.ReadFile(filepath.Join(repo, "docs", "quick-starts.md"))
	require.NoError(t, err)
	for _, q := range quickStarts {
		doc := readme
		if q.whole {
			doc = programs
		}
		src := program(t, q, string(doc))
		dir := filepath.Join(work, q.name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	}

	run(t, work, env, "go", "get",
		"github.com/ratescope/ratescope@"+version,
		"github.com/ratescope/ratescope/prometheus@"+version,
		"github.com/ratescope/ratescope/otel@"+version,
		"github.com/ratescope/ratescope/echo5limit@"+version)
	run(t, work, env, "go", "mod", "tidy")
	bin := filepath.Join(work, "bin")
	// -trimpath keeps the module cache's path, new on every run, out of
	// the build cache's keys: the third-party packages compiled by an
	// earlier run are reused.
	run(t, work, env, "go", "build", "-trimpath", "-o", bin+string(filepath.Separator), "./...")
	gomod := run(t, work, env, "go", "list", "-m", "github.com/ratescope/ratescope", "github.com/ratescope/ratescope/prometheus", "github.com/ratescope/ratescope/otel")
	assert.Equal(t, fmt.Sprintf("github.com/ratescope/ratescope %s\ngithub.com/ratescope/ratescope/prometheus %s\ngithub.com/ratescope/ratescope/otel %s\n", version, version, version), gomod)
	t.Logf("proxy, go get, go mod tidy and go build: %s", time.Since(started).Round(time.Millisecond))

	for _, q := range quickStarts {
		t.Run(q.name, func(t *testing.T) {
			progEnv := env
			if q.otel {
				// The periodic reader exports every 100 ms instead of
				// every minute.
				progEnv = append(slices.Clip(env), "OTEL_METRIC_EXPORT_INTERVAL=100")
			}
			var p *server
			if q.whole {
				p = startOnPort(t, filepath.Join(bin, q.name), progEnv)
			} else {
				p = start(t, filepath.Join(bin, q.name), progEnv)
			}
			for i := range 60 {
				resp := get(t, p.base+q.limited)
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d", i+1)
				// LoadRatio 0.8 of 60: warned from the 49th on, as the
				// README says.
				warned := ""
				if i+1 >= 49 {
					warned = "load"
				}
				assert.Equal(t, warned, resp.Header.Get("Ratescope-Warning"), "request %d", i+1)
			}
			resp := get(t, p.base+q.limited)
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			assert.Equal(t, "60", resp.Header.Get("Retry-After"))
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assertRefusal(t, refusal, q, resp, body)
			if q.metrics {
				body, err := io.ReadAll(get(t, p.base+"/metrics").Body)
				require.NoError(t, err)
				assert.Contains(t, string(body), `ratescope_decisions_total{kind="anon",outcome="denied",scope="api"} 1`)
				assert.Contains(t, string(body), `ratescope_decisions_total{kind="anon",outcome="allowed",scope="api"} 60`)
			}
			if q.otel {
				// stdoutmetric writes each export as one line of JSON: the
				// refusal is in one within a few exports.
				require.Eventually(t, func() bool {
					return strings.Contains(p.out.String(), `{"Key":"outcome","Value":{"Type":"STRING","Value":"denied"}}`)
				}, time.Minute, 50*time.Millisecond, "no export of ratescope.decisions with a refusal on standard output:\n%s", p.out.String())
				assert.Contains(t, p.out.String(), `"Name":"ratescope.decisions"`)
				assert.Contains(t, p.out.String(), `"Name":"ratescope.decision.duration"`)
				// The refusal's outcome is an attribute of the duration
				// too: ratescope.decisions itself counts it, and the 60
				// requests served, in the last export.
				require.Eventually(t, func() bool {
					return exportedDecisions(t, p.out.String())["api anon denied"] == 1
				}, time.Minute, 50*time.Millisecond, "no export of ratescope.decisions counting the refusal:\n%s", p.out.String())
				decisions := exportedDecisions(t, p.out.String())
				assert.Equal(t, int64(1), decisions["api anon denied"])
				assert.Equal(t, int64(60), decisions["api anon allowed"])
			}
			if q.whole {
				logged := p.stop()
				assert.Contains(t, logged, "ratescope.W602", "the startup checks are logged")
				if q.agrees {
					assert.NotContains(t, logged, "ratescope.W612", "the framework and ratescope agree on the client's address")
				}
			}
		})
	}
	t.Logf("total: %s", time.Since(started).Round(time.Millisecond))
}

// exportedDecisions returns the data points of ratescope.decisions in the
// last export that stdoutmetric wrote to out (one line of JSON an export),
// by their attributes ("scope kind outcome"); none if no export has them.
func exportedDecisions(t *testing.T, out string) map[string]int64 {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.HasPrefix(lines[i], "{") {
			continue
		}
		var rm struct {
			ScopeMetrics []struct {
				Metrics []struct {
					Name string
					Data struct {
						DataPoints []struct {
							Attributes []struct {
								Key   string
								Value struct{ Value any }
							}
							Value float64
						}
					}
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &rm), "%s", lines[i])
		got := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "ratescope.decisions" {
					continue
				}
				for _, p := range m.Data.DataPoints {
					attrs := map[string]string{}
					for _, a := range p.Attributes {
						attrs[a.Key] = fmt.Sprint(a.Value.Value)
					}
					got[attrs["scope"]+" "+attrs["kind"]+" "+attrs["outcome"]] = int64(p.Value)
				}
			}
		}
		if len(got) > 0 {
			return got
		}
	}
	return nil
}

// A refusal is the README's sample answer of a quick start to a caller
// over the limit.
type refusal struct {
	status string
	header http.Header
	body   string
}

// sampleRefusal returns the sample refusal of the README's section "A
// refusal": the text block that starts with "HTTP/1.1 429".
func sampleRefusal(t *testing.T, readme string) refusal {
	t.Helper()
	i := strings.Index(readme, "\n## A refusal\n")
	require.GreaterOrEqual(t, i, 0, "README has no heading %q", "A refusal")
	rest := readme[i:]
	start := strings.Index(rest, "\n```text\nHTTP/1.1 429 ")
	require.GreaterOrEqual(t, start, 0, "no sample refusal under %q", "A refusal")
	rest = rest[start+len("\n```text\n"):]
	end := strings.Index(rest, "\n```")
	require.GreaterOrEqual(t, end, 0)
	head, body, ok := strings.Cut(rest[:end], "\n\n")
	require.True(t, ok, "the sample's header and body are apart")
	lines := strings.Split(head, "\n")
	r := refusal{status: lines[0], header: http.Header{}, body: body}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ": ")
		require.True(t, ok, "a header line: %q", l)
		r.header.Add(k, v)
	}
	return r
}

// tRe matches the seconds until a limit has room in a RateLimit field,
// which a second passing between two requests may lower.
var tRe = regexp.MustCompile(`;t=[0-9]+`)

// assertRefusal checks the answer resp, body against the README's sample:
// the same status line and the same header fields with the same values
// (Date aside, and t of RateLimit at most its period), the same body, or
// for Echo the differences the README states.
func assertRefusal(t *testing.T, want refusal, q quickStart, resp *http.Response, body []byte) {
	t.Helper()
	assert.Equal(t, want.status, resp.Proto+" "+resp.Status)
	wantBody := want.body
	wantHeader := want.header.Clone()
	if q.contentType != "" {
		wantHeader.Set("Content-Type", q.contentType)
		wantBody += "\n"
		wantHeader.Set("Content-Length", fmt.Sprint(len(wantBody)))
	}
	assert.Equal(t, wantBody, string(body))
	var wantNames, gotNames []string
	for k := range wantHeader {
		wantNames = append(wantNames, k)
	}
	for k := range resp.Header {
		gotNames = append(gotNames, k)
	}
	assert.ElementsMatch(t, wantNames, gotNames, "the header fields of the refusal")
	for k, v := range wantHeader {
		switch k {
		case "Date":
			continue
		case "Ratelimit":
			// A limit without room has a t, at most w, the period
			// RateLimit-Policy gives the limit of that name; a refusal
			// has one at least.
			wRe, withT := regexp.MustCompile(`"([^"]+)";q=[0-9]+;w=([0-9]+)`), regexp.MustCompile(`"([^"]+)";r=[0-9]+;t=([0-9]+)`)
			ws := map[string]int{}
			for _, m := range wRe.FindAllStringSubmatch(resp.Header.Get("Ratelimit-Policy"), -1) {
				ws[m[1]], _ = strconv.Atoi(m[2])
			}
			ts := withT.FindAllStringSubmatch(resp.Header.Get(k), -1)
			assert.NotEmpty(t, ts, "a t for the limit that refused")
			for _, m := range ts {
				tv, _ := strconv.Atoi(m[2])
				assert.True(t, tv >= 1 && tv <= ws[m[1]], "t=%d of %s, a limit of w=%d", tv, m[1], ws[m[1]])
			}
			assert.Equal(t, tRe.ReplaceAllString(v[0], ";t=T"), tRe.ReplaceAllString(resp.Header.Get(k), ";t=T"), k)
			continue
		}
		assert.Equal(t, v, resp.Header.Values(k), k)
	}
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

// program returns the source of the quick start q: its README snippet as
// it is for a whole program; for a fragment, the snippet in a main
// function, the imports it names, and a server on a free port.
func program(t *testing.T, q quickStart, readme string) string {
	t.Helper()
	snippet := firstGoBlock(t, readme, q.heading)
	if q.whole {
		require.True(t, strings.HasPrefix(snippet, "package main\n"), "the README's %q is a whole program", q.heading)
		return snippet
	}
	body := q.prelude + snippet + "\nserve(" + q.handler + ")\n"
	names := map[string]bool{"log": true, "net": true, "fmt": true, "http": true} // serve's
	for _, m := range regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z]`).FindAllStringSubmatch(body, -1) {
		names[m[1]] = true
	}
	var lines []string
	for name := range names {
		p, ok := imports[name]
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

// A server is a quick start's program, running.
type server struct {
	base string // its base URL
	stop func() string
	out  *output // what a fragment wrote to standard output so far
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

// start starts the program bin, a fragment wrapped by program, waits for
// the address it says it listens on, and returns it; the program is
// killed when the test ends.
func start(t *testing.T, bin string, env []string) *server {
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
	stop := sync.OnceValue(func() string {
		cancel()
		_ = cmd.Wait()
		_ = w.Close()
		return stderr.String()
	})
	t.Cleanup(func() {
		logged := stop()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(bin), logged)
		}
	})
	addr := make(chan string, 1)
	out := new(output)
	go func() {
		defer close(addr)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20) // an export of the OpenTelemetry SDK is one long line
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
		return &server{base: "http://" + a, stop: stop, out: out}
	case <-time.After(time.Minute):
		t.Fatalf("%s did not say where it listens", filepath.Base(bin))
		return nil
	}
}

// startOnPort starts the program bin, a whole quick start as the README
// shows it, with PORT set to a port that was free, waits until the port
// takes connections (a connection alone, not a request, which the
// limiter would count), and returns it; stop ends the program and returns
// what it logged. A port taken in between, by another process of the
// machine, makes the program exit: it is tried again on another.
func startOnPort(t *testing.T, bin string, env []string) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		require.NoError(t, ln.Close())

		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(slices.Clip(env), "PORT="+port)
		var out strings.Builder // read only after Wait
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		stop := sync.OnceValue(func() string {
			cancel()
			<-exited
			return out.String()
		})
		t.Cleanup(func() {
			logged := stop()
			if t.Failed() {
				t.Logf("%s output:\n%s", filepath.Base(bin), logged)
			}
		})
		addr := net.JoinHostPort("127.0.0.1", port)
		ready := false
		deadline := time.After(time.Minute)
		tick := time.NewTicker(20 * time.Millisecond)
	wait:
		for {
			select {
			case <-exited:
				break wait
			case <-deadline:
				t.Fatalf("%s did not listen on :%s within a minute", filepath.Base(bin), port)
			case <-tick.C:
				if c, err := net.Dial("tcp", addr); err == nil {
					_ = c.Close()
					ready = true
					break wait
				}
			}
		}
		tick.Stop()
		if ready {
			return &server{base: "http://" + addr, stop: stop}
		}
		logged := stop()
		require.Less(t, attempt, 3, "%s exited before listening on :%s:\n%s", filepath.Base(bin), port, logged)
		t.Logf("%s exited before listening on :%s (taken?), trying another port:\n%s", filepath.Base(bin), port, logged)
	}
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
