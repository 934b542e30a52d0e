package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logLines returns n combined lines of one caller, two a second.
func logLines(addr string, n int) string {
	var b strings.Builder
	t0 := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(&b, "%s - - [%s] \"GET /api/records HTTP/1.1\" 200 5 \"-\" \"curl/8\"\n", addr, t0.Add(time.Duration(i)*time.Second/2).Format("02/Jan/2006:15:04:05 -0700"))
	}
	return b.String()
}

func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

type report struct {
	Lines  int64 `json:"lines"`
	Scopes []struct {
		Scope    string `json:"scope"`
		Requests int64  `json:"requests"`
		Refused  int64  `json:"refused"`
		Top      []struct {
			Caller string `json:"caller"`
		} `json:"top"`
	} `json:"scopes"`
}

func decode(t *testing.T, s string) report {
	t.Helper()
	var r report
	require.NoError(t, json.Unmarshal([]byte(s), &r), s)
	return r
}

// TestInputs: files, gzip files, standard input ("-" or no file), one
// after the other as one log.
func TestInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "access.log")
	require.NoError(t, os.WriteFile(plain, []byte(logLines("203.0.113.7", 100)), 0o644))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(logLines("203.0.113.8", 50)))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	zipped := filepath.Join(dir, "access.log.1.gz")
	require.NoError(t, os.WriteFile(zipped, gz.Bytes(), 0o644))

	code, out, stderr := runCmd(t, logLines("203.0.113.9", 30), "replay", "-json", plain, zipped, "-")
	require.Equal(t, 0, code, stderr)
	r := decode(t, out)
	assert.Equal(t, int64(180), r.Lines)
	require.Len(t, r.Scopes, 1)
	assert.Equal(t, int64(180), r.Scopes[0].Requests)
	assert.Len(t, r.Scopes[0].Top, 3)

	code, out, stderr = runCmd(t, logLines("203.0.113.9", 30), "replay", "-json")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, int64(30), decode(t, out).Lines)

	code, _, stderr = runCmd(t, "", "replay", filepath.Join(dir, "missing.log"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "missing.log")
}

// TestReplayText: the text summary and the HTML file.
func TestReplayText(t *testing.T) {
	t.Parallel()
	html := filepath.Join(t.TempDir(), "report.html")
	code, out, stderr := runCmd(t, logLines("203.0.113.7", 200)+"garbage\n", "replay", "-html", html, "-what-if", "api.anon=30/min")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "api anon (60/min,1000/day): 200 requests")
	assert.Contains(t, out, "1 unreadable")
	assert.Contains(t, out, "203.0.113.7")
	assert.Contains(t, out, "what if")
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(page), `<path class="series" data-caller="203.0.113.7"`)
}

// TestBadFlags exit 2 and say what is wrong.
func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "rates", args: []string{"replay", "-rates", "api.anon=60/fortnight"}, want: "fortnight"},
		{name: "unknown scope", args: []string{"replay", "-rates", "nope.anon=60/min"}, want: "nope.anon"},
		{name: "format", args: []string{"replay", "-format", "$remote_addr $status"}, want: "no a time"},
		{name: "json fields", args: []string{"replay", "-json-fields", "when=t"}, want: "when"},
		{name: "what-if", args: []string{"replay", "-what-if", "api.anon=1/eon"}, want: "eon"},
		{name: "route", args: []string{"replay", "-route", "api=api"}, want: "PREFIX"},
		{name: "logged-by", args: []string{"replay", "-logged-by", "cdn"}, want: "proxy or app"},
		{name: "command", args: []string{"play"}, want: "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCmd(t, "", tc.args...)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

// TestCheck: the checks and the limits in force; 1 on an error, 2 on a
// warning with -strict.
func TestCheck(t *testing.T) {
	t.Parallel()
	code, out, _ := runCmd(t, "", "check", "-rates", "api.anon=30/min,500/day")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "no warnings")
	assert.Regexp(t, `api +30/min,500/day +600/min,20000/day`, out)
	assert.Contains(t, out, "autocomplete.project")

	code, out, _ = runCmd(t, "", "check", "-rates", "api.anon=0/min")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "ERROR")

	code, out, _ = runCmd(t, "", "check", "-rates", "apx.anon=10/min x.anon=5/min", "-route", "/x/=x")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "ratescope.E001")

	code, out, _ = runCmd(t, "", "check", "-num-proxies", "unset")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "ratescope.W601 WARNING")

	code, _, _ = runCmd(t, "", "check", "-num-proxies", "unset", "-strict")
	assert.Equal(t, 2, code)

	// Plans: listed under their scope, their periods checked.
	code, out, _ = runCmd(t, "", "check", "-rates", "api.user@gold=100000/day,6000/min api.user@silver=1000/min,50000/day")
	assert.Equal(t, 0, code, out)
	assert.Regexp(t, `\napi +60/min,1000/day +600/min,20000/day\napi\.user@gold +- +6000/min,100000/day\napi\.user@silver +- +1000/min,50000/day\n`, out)
	code, out, _ = runCmd(t, "", "check", "-rates", "api.user@gold=6000/min")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "ratescope.E001")
	assert.Contains(t, out, "api.user@gold: its periods (min) are not those of api.user (min,day)")
}

// TestProgress: nothing in the first second; then a bar redrawn on a
// terminal, or a line every ten seconds otherwise.
func TestProgress(t *testing.T) {
	t.Parallel()
	start := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		terminal bool
		want     string
	}{
		{name: "terminal", terminal: true, want: "\r[###############...............] ratescope: 200000 lines, 100000 lines/s,  50%\r[###############...............] ratescope: 300000 lines, 100000 lines/s,  50%\n"},
		{name: "pipe", want: "ratescope: 200000 lines, 100000 lines/s,  50%\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			now := start
			p := &progress{w: &b, terminal: tc.terminal, total: 1000, read: 500, start: start, now: func() time.Time { return now }}
			now = start.Add(time.Second / 2)
			p.lines(50000)
			assert.Empty(t, b.String(), "nothing in the first second")
			now = start.Add(2 * time.Second)
			p.lines(200000)
			now = start.Add(3 * time.Second)
			p.lines(300000)
			p.done()
			assert.Equal(t, tc.want, b.String())
		})
	}
}

// TestReplayOfNothing: a replay that limits nothing or reads nothing
// exits 1 and says which flag to look at, after its report.
func TestReplayOfNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		log  string
		args []string
		want string
	}{
		{name: "json flag on a combined log", log: logLines("203.0.113.7", 20), args: []string{"-format", "json"}, want: "20 lines, and none could be read as -format json; the first reads as -format combined"},
		{name: "json log read as combined", log: `{"time":"2024-03-01T12:00:00Z","remote_addr":"203.0.113.7","request_uri":"/api/x"}` + "\n", want: "1 line, and none could be read as -format combined; the first reads as -format json"},
		{name: "no format reads it", log: "garbage\n", want: "give the log's format: -format combined, main, json, or its nginx log_format string"},
		{name: "no path routed", log: strings.ReplaceAll(logLines("203.0.113.7", 20), "/api/", "/static/"), want: "20 lines read, and none was limited: no path starts with the prefix of a route (/api/=api /autocomplete/=autocomplete.*); give the application's routes with -route PREFIX=SCOPE"},
		{name: "no line", log: "", want: "no line to replay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runCmd(t, tc.log, append([]string{"replay", "-quiet"}, tc.args...)...)
			assert.Equal(t, 1, code)
			assert.Contains(t, out, "from", "the report is written")
			assert.Contains(t, stderr, tc.want)
		})
	}
}

// TestRouteAddsToTheDefaults: -route adds a route to the default ones
// (replacing the one of the same prefix); check lists them.
func TestRouteAddsToTheDefaults(t *testing.T) {
	t.Parallel()
	log := logLines("203.0.113.7", 20) + strings.ReplaceAll(logLines("203.0.113.8", 20), "/api/records", "/api/export/all")
	code, out, stderr := runCmd(t, log, "replay", "-quiet", "-json", "-route", "/api/export=api:5")
	require.Equal(t, 0, code, stderr)
	r := decode(t, out)
	require.Len(t, r.Scopes, 1)
	assert.Equal(t, int64(40), r.Scopes[0].Requests, "/api/ is still routed")
	assert.Equal(t, int64(8), r.Scopes[0].Refused, "the exports cost 5: 12 fill 60/min")

	code, out, _ = runCmd(t, "", "check", "-route", "/api/export=api:5", "-route", "/autocomplete/=autocomplete.*:2")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "routes: /api/=api /api/export=api:5 /autocomplete/=autocomplete.*:2\n")
}

// TestRouteToAnUnknownScope: a route to a scope that is neither the
// library's nor given rates is an error of replay and check.
func TestRouteToAnUnknownScope(t *testing.T) {
	t.Parallel()
	want := `-route /api/=search: scope "search" is not the library's (api, autocomplete.NAME); a scope of the application's own needs its rates in -rates (search.anon=... search.user=...)`
	code, _, stderr := runCmd(t, logLines("203.0.113.7", 5), "replay", "-quiet", "-route", "/api/=search")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, want)
	code, out, _ := runCmd(t, "", "check", "-route", "/api/=search")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, want)
	assert.NotContains(t, out, "no warnings")

	code, out, _ = runCmd(t, "", "check", "-route", "/find/=search.*")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `-route /find/=search.*: no scope of the library starts with "search."`)

	code, out, _ = runCmd(t, "", "check", "-route", "/reports/=reports", "-rates", "reports.anon=10/min")
	assert.Equal(t, 0, code, out)
	assert.Regexp(t, `\nreports +10/min +600/min,20000/day\n`, out, "a scope of the application's own, on api's starting values")
}
