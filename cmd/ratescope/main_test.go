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

	code, out, _ = runCmd(t, "", "check", "-rates", "apx.anon=10/min", "-route", "/x/=x")
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
