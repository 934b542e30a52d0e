package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/cmd/ratescope/internal/replay"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// req is one request of a generated log.
type req struct {
	t    time.Time
	addr string // $remote_addr
	xff  string // $http_x_forwarded_for, "" for none
	user string
	path string
}

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// paced returns n requests by addr (or user) at even intervals of every,
// from start.
func paced(addr, user, path string, start time.Time, every time.Duration, n int) []req {
	out := make([]req, n)
	for i := range out {
		out[i] = req{t: start.Add(time.Duration(i) * every), addr: addr, user: user, path: path}
	}
	return out
}

func sorted(rs ...[]req) []req {
	all := slices.Concat(rs...)
	slices.SortStableFunc(all, func(a, b req) int { return a.t.Compare(b.t) })
	return all
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// combined writes rs as nginx's combined format; main adds the
// X-Forwarded-For field.
func combined(rs []req, main bool) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, `%s - %s [%s] "GET %s HTTP/1.1" 200 512 "https://portal.example/" "Mozilla/5.0 (X11; Linux x86_64)"`,
			r.addr, dash(r.user), r.t.Format("02/Jan/2006:15:04:05 -0700"), r.path)
		if main {
			fmt.Fprintf(&b, ` "%s"`, dash(r.xff))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// custom is the log_format of customFormat.
const customFormat = `$time_iso8601 $remote_addr "$http_x_forwarded_for" $remote_user $request_method $request_uri $status`

func custom(rs []req) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s %s \"%s\" %s GET %s 200\n", r.t.In(time.FixedZone("", 2*3600)).Format(time.RFC3339), r.addr, dash(r.xff), dash(r.user), r.path)
	}
	return b.String()
}

// jsonLines writes rs as JSON lines with the field names ts, client, fwd,
// who, verb and uri.
func jsonLines(rs []req) string {
	var b strings.Builder
	for _, r := range rs {
		m := map[string]any{"ts": json.Number(fmt.Sprintf("%d.000", r.t.Unix())), "client": r.addr, "verb": "GET", "uri": r.path, "code": 200, "nested": map[string]any{"a": []int{1, 2}}}
		if r.xff != "" {
			m["fwd"] = r.xff
		}
		if r.user != "" {
			m["who"] = r.user
		}
		j, _ := json.Marshal(m)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

const jsonFields = "time=ts,addr=client,xff=fwd,user=who,method=verb,path=uri"

func run(t *testing.T, opt replay.Options, log string) *replay.Report {
	t.Helper()
	if opt.Settings.LoggedBy == "" {
		s := replay.DefaultSettings()
		s.Rates, s.Routes, s.MaxEntries = opt.Settings.Rates, opt.Settings.Routes, opt.Settings.MaxEntries
		opt.Settings = s
	}
	r, err := replay.New(opt)
	require.NoError(t, err)
	require.NoError(t, r.Read(strings.NewReader(log)))
	return r.Report()
}

func group(t *testing.T, rep *replay.Report, scope, kind string) replay.GroupReport {
	t.Helper()
	for _, g := range rep.Groups {
		if g.Scope == scope && g.Kind == kind {
			return g
		}
	}
	require.Failf(t, "no group", "%s %s", scope, kind)
	return replay.GroupReport{}
}

// traffic is a deterministic mix: anonymous callers at many paces and in
// bursts, signed-in users, search boxes, and paths no route limits.
func traffic() []req {
	rng := rand.New(rand.NewPCG(1, 2))
	var all [][]req
	for i := range 24 {
		addr := fmt.Sprintf("203.0.113.%d", i+1)
		perMin := 10 + rng.IntN(150)
		start := t0.Add(time.Duration(rng.IntN(600)) * time.Second)
		path := "/api/records"
		if i%4 == 3 {
			path = "/autocomplete/" + strings.TrimPrefix(autocomplete.Scopes()[i%9].Name, "autocomplete.")
		}
		user := ""
		if i%5 == 4 {
			user = fmt.Sprintf("user-%d", i)
		}
		all = append(all, paced(addr, user, path, start, time.Minute/time.Duration(perMin), perMin*20))
	}
	// Bursts: 100 requests in one second, four times.
	for k := range 4 {
		all = append(all, paced("198.51.100.77", "", "/api/burst", t0.Add(time.Duration(k)*7*time.Minute), 10*time.Millisecond, 100))
	}
	all = append(all, paced("198.51.100.200", "", "/static/app.js", t0, time.Second, 300))
	return sorted(all...)
}

// TestDecisionsMatchLimiter replays a log and decides the same requests
// with a core.Limiter of its own, on a clock at each request's time:
// every decision must be the same.
func TestDecisionsMatchLimiter(t *testing.T) {
	t.Parallel()
	rs := traffic()
	var now time.Time
	ref, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{SweepInterval: -1}),
		Scopes:     append(core.DefaultScopes(), autocomplete.Scopes()...),
		NumProxies: new(1),
		Now:        func() time.Time { return now },
	})
	require.NoError(t, err)
	byTime := map[time.Time][]req{}
	for _, r := range rs {
		byTime[r.t.Truncate(time.Second)] = append(byTime[r.t.Truncate(time.Second)], r)
	}
	var decided, refused int
	opt := replay.Options{Decided: func(d replay.Decision) {
		decided++
		now = d.Time
		c := core.UserCaller(d.Caller)
		if !d.User {
			c = core.NetworkCaller(netip.PrefixFrom(netip.MustParseAddr(d.Caller), 32))
		}
		want, err := ref.AllowN(context.Background(), d.Scope, c, d.Cost)
		require.NoError(t, err)
		if !assert.Equal(t, want.Allowed, d.Allowed, "line %d: %s %s at %s", d.Line, d.Scope, d.Caller, d.Time) {
			t.FailNow()
		}
		if !d.Allowed {
			refused++
		}
	}}
	rep := run(t, opt, combined(rs, false))
	assert.Equal(t, len(rs)-300, decided, "every line but the static ones is decided")
	assert.Greater(t, refused, 100, "the traffic reaches the limits")
	assert.Equal(t, int64(300), rep.Unrouted)
	assert.Equal(t, int64(len(rs)), rep.Lines)
}

// TestPacedCallers: a caller paced at 70/min for ten minutes under 60/min
// gets at most 60 a minute; one at 30/min is never refused.
func TestPacedCallers(t *testing.T) {
	t.Parallel()
	rs := sorted(
		paced("203.0.113.7", "", "/api/records", t0, time.Minute/70, 700),
		paced("203.0.113.8", "", "/api/records", t0, 2*time.Second, 300),
	)
	var opt replay.Options
	opt.Settings.Rates = core.RateTable{"api.anon": "60/min"}
	rep := run(t, opt, combined(rs, false))
	g := group(t, rep, "api", "anon")
	require.Len(t, g.Top, 2)
	fast, slow := g.Top[0], g.Top[1]
	assert.Equal(t, "203.0.113.7", fast.Caller)
	assert.Equal(t, int64(700), fast.Requests)
	allowed := fast.Requests - fast.Refused
	// Ten disjoint minutes hold at most 60 each; an even pace within
	// 20/21 of the limit is always served (docs/adr/0001-counting-algorithm.md).
	assert.LessOrEqual(t, allowed, int64(600))
	assert.GreaterOrEqual(t, allowed, int64(600*20/21))
	assert.InDelta(t, 70, fast.PeakMinute, 1, "70 a minute, to the second")
	assert.Equal(t, "203.0.113.8", slow.Caller)
	assert.Equal(t, int64(0), slow.Refused)
	assert.Equal(t, int64(300), slow.Requests)
	assert.Equal(t, int64(30), slow.PeakMinute)
	assert.Equal(t, int64(2), g.Callers)
	assert.Equal(t, []int64{1}, g.RefusedCallers)
}

// TestForgedForwardedFor: entries a caller writes to the left of
// X-Forwarded-For never make callers, with a number of proxies or with
// trusted networks.
func TestForgedForwardedFor(t *testing.T) {
	t.Parallel()
	var rs []req
	for i := range 1000 {
		rs = append(rs, req{t: t0.Add(time.Duration(i) * 100 * time.Millisecond), addr: "203.0.113.9", xff: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256), path: "/api/records"})
	}
	t.Run("one proxy", func(t *testing.T) {
		t.Parallel()
		rep := run(t, replay.Options{Format: "main"}, combined(rs, true))
		g := group(t, rep, "api", "anon")
		assert.Equal(t, int64(1), g.Callers)
		assert.Equal(t, "203.0.113.9", g.Top[0].Caller)
		assert.LessOrEqual(t, g.Top[0].Requests-g.Top[0].Refused, int64(120), "100 s: at most two minutes of 60")
	})
	t.Run("trusted networks", func(t *testing.T) {
		t.Parallel()
		// A load balancer at 192.0.2.1 in front of nginx: both trusted.
		lb := slices.Clone(rs)
		for i := range lb {
			lb[i].xff += ", 198.51.100.1"
			lb[i].addr = "192.0.2.1"
		}
		opt := replay.Options{Format: "main", Settings: replay.DefaultSettings()}
		opt.Settings.NumProxies = nil
		opt.Settings.TrustedProxies = core.Networks{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("127.0.0.0/8")}
		rep := run(t, opt, combined(lb, true))
		g := group(t, rep, "api", "anon")
		assert.Equal(t, int64(1), g.Callers)
		assert.Equal(t, "198.51.100.1", g.Top[0].Caller)
	})
}

// TestFormats: the same traffic in every format gives the same report.
func TestFormats(t *testing.T) {
	t.Parallel()
	rs := traffic()[:3000]
	for i := range rs {
		if i%3 == 0 {
			rs[i].xff = "192.0.2.44"
		}
	}
	fields, err := replay.ParseJSONFields(jsonFields)
	require.NoError(t, err)
	want := run(t, replay.Options{}, combined(rs, false))
	require.NotEmpty(t, want.Groups)
	for _, tc := range []struct {
		name string
		opt  replay.Options
		log  string
	}{
		{name: "main", opt: replay.Options{Format: "main"}, log: combined(rs, true)},
		{name: "custom", opt: replay.Options{Format: customFormat}, log: custom(rs)},
		{name: "custom as main", opt: replay.Options{Format: replay.FormatMain}, log: combined(rs, true)},
		{name: "json", opt: replay.Options{Format: "json", Fields: fields}, log: jsonLines(rs)},
		{name: "crlf", opt: replay.Options{}, log: strings.ReplaceAll(combined(rs, false), "\n", "\r\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := run(t, tc.opt, tc.log)
			assert.Equal(t, int64(0), got.Skipped, got.SkippedExamples)
			assert.Equal(t, want.Groups, got.Groups)
			assert.Equal(t, want.From, got.From)
			assert.Equal(t, want.To, got.To)
		})
	}
}

// TestUnreadableLines are counted and skipped, the first five quoted, and
// the run goes on.
func TestUnreadableLines(t *testing.T) {
	t.Parallel()
	rs := paced("203.0.113.7", "", "/api/records", t0, time.Second, 20)
	log := combined(rs[:10], false) + "garbage\n\n" + `203.0.113.7 - - [bad time] "GET /api/x HTTP/1.1" 200 1 "-" "-"` + "\n" +
		`203.0.113.7 - - [01/Mar/2024:12:00:30 +0000] "\x16\x03\x01" 400 1 "-" "-"` + "\n" +
		"a\nb\nc\nd\n" + combined(rs[10:], false)
	rep := run(t, replay.Options{}, log)
	assert.Equal(t, int64(27), rep.Lines, "an empty line is no line")
	assert.Equal(t, int64(7), rep.Skipped)
	require.Len(t, rep.SkippedExamples, 5)
	assert.Contains(t, rep.SkippedExamples[0], "line 11")
	assert.Contains(t, rep.SkippedExamples[1], "$time_local")
	assert.Contains(t, rep.SkippedExamples[2], "METHOD PATH")
	assert.Equal(t, int64(20), group(t, rep, "api", "anon").Requests)
}

// TestRoutes: costs, a scope of its own, search boxes, and paths not
// limited.
func TestRoutes(t *testing.T) {
	t.Parallel()
	rs := sorted(
		paced("203.0.113.1", "", "/api/export/all", t0, time.Second, 30),
		paced("203.0.113.2", "", "/autocomplete/project", t0, time.Second, 30),
		paced("203.0.113.3", "", "/autocomplete/unknown", t0, time.Second, 30),
		paced("203.0.113.4", "", "/reports/x", t0, time.Second, 30),
	)
	var opt replay.Options
	for _, r := range []string{"/api/=api", "/api/export=api:5", "/autocomplete/=autocomplete.*", "/reports/=reports"} {
		require.NoError(t, opt.Settings.Routes.Set(r))
	}
	opt.Settings.Rates = core.RateTable{"reports.anon": "10/min"}
	rep := run(t, opt, combined(rs, false))
	api := group(t, rep, "api", "anon")
	assert.Equal(t, int64(30), api.Requests)
	assert.Equal(t, int64(30-12), api.Refused[0], "12 requests of cost 5 fill 60/min")
	assert.Equal(t, int64(0), group(t, rep, "autocomplete.project", "anon").Refused[0])
	assert.Equal(t, int64(20), group(t, rep, "reports", "anon").Refused[0])
	assert.Equal(t, int64(30), rep.Unrouted, "a search box the limiter does not know is not limited")

	_, err := replay.ParseRoute("api=api")
	assert.ErrorContains(t, err, "PREFIX starting with /")
	_, err = replay.ParseRoute("/api/=api:0")
	assert.ErrorContains(t, err, "cost")
}

// TestWhatIf: each table decides the same requests with a limiter of its
// own, over -rates.
func TestWhatIf(t *testing.T) {
	t.Parallel()
	rs := sorted(
		paced("203.0.113.7", "", "/api/records", t0, time.Minute/70, 700),
		paced("203.0.113.8", "", "/api/records", t0, 2*time.Second, 300),
	)
	opt := replay.Options{WhatIf: replay.ParseWhatIf("api.anon=100/min; api.anon=20/min ;")}
	opt.Settings.Rates = core.RateTable{"api.anon": "60/min"}
	rep := run(t, opt, combined(rs, false))
	g := group(t, rep, "api", "anon")
	assert.Equal(t, []string{"api.anon=60/min", "api.anon=100/min", "api.anon=20/min"}, rep.Tables)
	assert.Equal(t, []string{"60/min", "100/min", "20/min"}, g.Rates)
	assert.Equal(t, []int64{1, 0, 2}, g.RefusedCallers)
	assert.Equal(t, int64(0), g.Refused[1])
	assert.Greater(t, g.Refused[2], g.Refused[0])

	var j map[string]any
	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))
	require.NoError(t, json.Unmarshal(b.Bytes(), &j))
	require.Len(t, j["what_if"], 2)
}

// TestJSONShape: -json has exactly the keys of the contract.
func TestJSONShape(t *testing.T) {
	t.Parallel()
	rs := paced("203.0.113.7", "", "/api/records", t0, time.Second/2, 200)
	rep := run(t, replay.Options{}, combined(rs, false))
	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))
	want := `{"lines":200,"skipped":0,"from":"2024-03-01T12:00:00Z","to":"2024-03-01T12:01:39Z","scopes":[` +
		`{"scope":"api","kind":"anon","requests":200,"refused":` + fmt.Sprint(group(t, rep, "api", "anon").Refused[0]) +
		`,"callers":1,"refused_callers":1,"top":[{"caller":"203.0.113.7","requests":200,"refused":` + fmt.Sprint(group(t, rep, "api", "anon").Refused[0]) + `,"peak_minute":120}]}]}` + "\n"
	assert.Equal(t, want, b.String())
}

// TestTop: the top list is sorted by refused then requests, and cut at
// Top.
func TestTop(t *testing.T) {
	t.Parallel()
	var all [][]req
	for i := range 30 {
		all = append(all, paced(fmt.Sprintf("203.0.113.%d", i+1), "", "/api/x", t0, time.Minute/time.Duration(40+i*2), 40+i*2))
	}
	rep := run(t, replay.Options{Top: 5}, combined(sorted(all...), false))
	g := group(t, rep, "api", "anon")
	require.Len(t, g.Top, 5)
	assert.Equal(t, "203.0.113.30", g.Top[0].Caller)
	for i := 1; i < len(g.Top); i++ {
		a, b := g.Top[i-1], g.Top[i]
		assert.True(t, a.Refused > b.Refused || a.Refused == b.Refused && a.Requests >= b.Requests, "%v before %v", a, b)
	}
	assert.Equal(t, int64(30), g.Callers)
}

// TestBoundedCallers: past MaxEntries, callers are retired early and
// counted once each when they never come back.
func TestBoundedCallers(t *testing.T) {
	t.Parallel()
	var rs []req
	for i := range 5000 {
		rs = append(rs, req{t: t0.Add(time.Duration(i) * 10 * time.Millisecond), addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String(), path: "/api/x"})
	}
	rs = append(rs, paced("203.0.113.7", "", "/api/x", t0.Add(time.Minute), time.Second/2, 100)...)
	var opt replay.Options
	opt.Settings.MaxEntries = 100
	rep := run(t, opt, combined(sorted(rs), false))
	g := group(t, rep, "api", "anon")
	assert.Equal(t, int64(5001), g.Callers)
	assert.Equal(t, "203.0.113.7", g.Top[0].Caller)
	assert.Equal(t, int64(100-60), g.Top[0].Refused)
	assert.Equal(t, int64(5000), g.PeakMinute[0].Callers)
}

// TestHTML: the page is the same for the same log, has no script and
// nothing fetched, and its charts carry the series of the top callers and
// the limits.
func TestHTML(t *testing.T) {
	t.Parallel()
	rs := sorted(
		paced("203.0.113.7", "", "/api/records", t0, time.Minute/70, 700),
		paced("203.0.113.8", "", "/api/records", t0, 2*time.Second, 300),
		paced("198.51.100.9", "alice", "/api/records", t0, time.Second, 600),
	)
	page := func() string {
		rep := run(t, replay.Options{WhatIf: []string{"api.anon=30/min"}}, combined(rs, false))
		var b bytes.Buffer
		require.NoError(t, rep.WriteHTML(&b))
		return b.String()
	}
	p := page()
	assert.Equal(t, p, page())
	for _, s := range []string{
		`<section class="group" id="api-anon" data-scope="api" data-kind="anon">`,
		`<svg class="chart" data-chart="per-minute" data-scope="api" data-kind="anon"`,
		`<svg class="chart" data-chart="peak-minute" data-scope="api" data-kind="anon"`,
		`<svg class="chart" data-chart="peak-day" data-scope="api" data-kind="anon"`,
		`<svg class="chart" data-chart="what-if" data-scope="api" data-kind="anon"`,
		`<path class="series" data-caller="203.0.113.7"`,
		`<path class="series" data-caller="203.0.113.8"`,
		`<path class="series" data-caller="alice"`,
		`<line class="limit" data-limit="60" data-refused-callers="1"`,
		`<line class="limit" data-limit="600" data-refused-callers="0"`,
		`<rect class="bar" data-table="1" data-rates="30/min" data-refused="`,
		`<tr class="caller" data-caller="203.0.113.7">`,
		`<section id="what-if">`,
	} {
		assert.Contains(t, p, s)
	}
	assert.NotContains(t, p, "<script")
	assert.NotContains(t, p, "src=")
	assert.NotRegexp(t, `href="[^#]`, p, "links within the page only")
}

// TestPlansInRates: -rates takes plan keys; a log has no plans, so users
// are decided on the scope's own rates.
func TestPlansInRates(t *testing.T) {
	t.Parallel()
	rs := sorted(paced("203.0.113.7", "alice", "/api/records", t0, time.Second, 10))
	var opt replay.Options
	opt.Settings.Rates = core.RateTable{"api.user": "5/min,1000/day", "api.user@gold": "50/min,1000/day"}
	rep := run(t, opt, combined(rs, false))
	g := group(t, rep, "api", "user")
	require.Len(t, g.Top, 1)
	assert.Equal(t, int64(10), g.Top[0].Requests)
	assert.Equal(t, int64(5), g.Top[0].Refused, "api.user's 5/min, not gold's")
}

// TestWhatIfSlidingWindows: the what-if figure the report explains beside
// itself (replay.WindowsNote). A caller steady at 150 requests a minute for
// 10 minutes, against 120/min: counting clock minutes would refuse 30 a
// minute, 300; the limiter's windows slide and free their counts with
// their 3-second buckets, so it admits a little less than 120 in every 60
// seconds and refuses 340. At 60/min it refuses 900, as clock minutes
// would. The text, HTML and JSON outputs carry the note.
func TestWhatIfSlidingWindows(t *testing.T) {
	t.Parallel()
	rs := paced("203.0.113.7", "", "/api/records", t0, 400*time.Millisecond, 1500)
	opt := replay.Options{WhatIf: []string{"api.anon=120/min,5000/day"}}
	opt.Settings.Rates = core.RateTable{"api.anon": "60/min,1000/day"}
	rep := run(t, opt, combined(rs, false))
	g := group(t, rep, "api", "anon")
	require.Equal(t, int64(1500), g.Requests)
	require.Len(t, g.Top, 1)
	assert.Equal(t, int64(150), g.Top[0].PeakMinute)
	clockMinutes := func(limit int64) int64 { return 10 * max(0, g.Top[0].PeakMinute-limit) }
	assert.Equal(t, int64(900), clockMinutes(60))
	assert.Equal(t, int64(300), clockMinutes(120))
	assert.Equal(t, []int64{900, 340}, g.Refused, "the limiter's answers: at 120/min more than clock minutes give")
	assert.Contains(t, replay.WindowsNote, fmt.Sprintf("against 120/min: %d refused, not %d", g.Refused[1], clockMinutes(120)),
		"the note's example is this replay's")

	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var text, page, js bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.NoError(t, rep.WriteHTML(&page))
	require.NoError(t, rep.WriteJSON(&js))
	assert.Contains(t, words(text.String()), "120/min,5000/day 1500 340 (22.7%) 1 "+replay.WindowsNote, "the note right below the figure")
	assert.Contains(t, page.String(), `<p class="note windows">`+template.HTMLEscapeString(replay.WindowsNote)+`</p>`)
	var j struct {
		Note string `json:"note"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &j))
	assert.Equal(t, replay.WindowsNote, j.Note)

	// Without -what-if there is no comparison, and no note.
	rep = run(t, replay.Options{Settings: opt.Settings}, combined(rs, false))
	text.Reset()
	js.Reset()
	require.NoError(t, rep.WriteText(&text))
	require.NoError(t, rep.WriteJSON(&js))
	assert.NotContains(t, text.String(), "Refused: the limiter's own answers")
	assert.NotContains(t, js.String(), `"note"`)
}

// TestReportWording: counts read right in the singular and the plural,
// and a list or chart of callers says how many it left out.
func TestReportWording(t *testing.T) {
	t.Parallel()
	callers := func(n, perMinute int) string {
		var all [][]req
		for i := range n {
			all = append(all, paced(fmt.Sprintf("203.0.113.%d", i+1), "", "/api/x", t0, time.Minute/time.Duration(perMinute+i), perMinute+i))
		}
		return combined(sorted(all...), false)
	}
	for _, tc := range []struct {
		name      string
		log       string
		top       int
		text      []string
		html      []string
		notInText []string
		notInHTML []string
	}{
		{
			name:      "one caller",
			log:       callers(1, 70),
			text:      []string{"70 lines from", "70 requests, 10 refused (14.3%), 1 caller, 1 refused at least once", "the callers refused most (the 1 caller):"},
			html:      []string{"<p id=\"summary\">70 lines from", "70 requests, 10 refused (14.3%); 1 caller, 1 refused at least once.", "limit 60/min: 1 caller above</text>", "Requests per minute: the 1 caller</h3>", "Callers refused most: the 1 caller</h3>"},
			notInText: []string{"1 callers"},
			notInHTML: []string{"1 callers"},
		},
		{
			name:      "one line",
			log:       callers(1, 1),
			text:      []string{"1 line from", "1 request, 0 refused (0.0%), 1 caller, 0 refused at least once"},
			html:      []string{"limit 60/min: 0 callers above</text>"},
			notInText: []string{"1 lines", "1 requests"},
		},
		{
			name: "all shown",
			log:  callers(3, 70),
			text: []string{"3 callers, 3 refused at least once", "the callers refused most (all 3 callers):"},
			html: []string{"limit 60/min: 3 callers above</text>", "Callers refused most: all 3 callers</h3>", "Requests per minute: all 3 callers</h3>"},
		},
		{
			name: "some left out",
			log:  callers(30, 40),
			top:  5,
			text: []string{"30 callers, 9 refused at least once", "the callers refused most (top 5 of 30 callers):"},
			html: []string{"limit 60/min: 9 callers above</text>", "Callers refused most: top 5 of 30 callers</h3>", "Requests per minute: top 5 of 30 callers</h3>"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := run(t, replay.Options{Top: tc.top}, tc.log)
			var text, page bytes.Buffer
			require.NoError(t, rep.WriteText(&text))
			require.NoError(t, rep.WriteHTML(&page))
			for _, s := range tc.text {
				assert.Contains(t, text.String(), s)
			}
			for _, s := range tc.notInText {
				assert.NotContains(t, text.String(), s)
			}
			for _, s := range tc.html {
				assert.Contains(t, page.String(), s)
			}
			for _, s := range tc.notInHTML {
				assert.NotContains(t, page.String(), s)
			}
		})
	}
}
