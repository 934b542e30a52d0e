package browsertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// updateScreenshot writes the screenshots of TestReplayReportOfTheHowTo,
// TestLiveView (gin) and TestDashboardScreenshot where the how-tos show
// them; without it the
// screenshots go to a temporary directory, so that a test run never
// changes the tree.
var updateScreenshot = flag.Bool("update-screenshot", false,
	"write the screenshots of the how-tos: "+screenshotPath+", "+liveViewScreenshot+", "+dashboardScreenshot)

// screenshotPath is the screenshot of the how-to "choose limits from your
// access logs", relative to this module.
const screenshotPath = "../docs/howto/replay-report.png"

// screenshotWidth is the width of the screenshot, in CSS pixels at a
// device scale of 1.
const screenshotWidth = 1200

// reportLog writes ten minutes of a known traffic in the combined format:
//   - 203.0.113.7 paced at 70 requests a minute on /api/records, over a
//     limit of 60/min;
//   - 198.51.100.2 paced at 30 a minute, never refused;
//   - alice, signed in, at 20 a minute;
//   - 192.0.2.44 typing in the project search box: 90 searches in its
//     first minute, over the box's starting 60/min.
func reportLog(t *testing.T, path string) {
	t.Helper()
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	type line struct {
		at   time.Duration
		text string
	}
	var lines []line
	paced := func(addr, user, path string, perMinute, minutes int) {
		every := time.Minute / time.Duration(perMinute)
		for i := range perMinute * minutes {
			at := time.Duration(i) * every
			lines = append(lines, line{at, fmt.Sprintf(`%s - %s [%s] "GET %s HTTP/1.1" 200 512 "-" "client/1.0"`,
				addr, user, start.Add(at).Format("02/Jan/2006:15:04:05 -0700"), path)})
		}
	}
	paced("203.0.113.7", "-", "/api/records", 70, 10)
	paced("198.51.100.2", "-", "/api/records", 30, 10)
	paced("192.0.2.10", "alice", "/api/records", 20, 10)
	paced("192.0.2.44", "-", "/autocomplete/project?q=glacier", 90, 1)
	// A log is in time order.
	slices.SortStableFunc(lines, func(a, b line) int { return int(a.at - b.at) })
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// replayJSON is the part of ratescope replay -json the test reads.
type replayJSON struct {
	Lines   int64 `json:"lines"`
	Skipped int64 `json:"skipped"`
	Scopes  []struct {
		Scope          string `json:"scope"`
		Kind           string `json:"kind"`
		Requests       int64  `json:"requests"`
		Refused        int64  `json:"refused"`
		Callers        int64  `json:"callers"`
		RefusedCallers int64  `json:"refused_callers"`
		Top            []struct {
			Caller  string `json:"caller"`
			Refused int64  `json:"refused"`
		} `json:"top"`
	} `json:"scopes"`
}

// chartView is what the browser drew of one chart of the report.
type chartView struct {
	Chart, Scope, Kind string
	Width, Height      float64
	// Limit is the data-limit of the chart's limit line, 0 if none;
	// LimitY its position on the page; RefusedCallers its
	// data-refused-callers, -1 if none.
	Limit          int64
	LimitY         float64
	RefusedCallers int64
	Series         []struct {
		Caller, Series string
		Top, Bottom    float64 // on the page, in CSS pixels
		Length         float64 // of the drawn path
	}
	Bars []struct {
		Table          int
		Rates          string
		Refused        int64
		RefusedCallers int64
		Height         float64
	}
}

// chartsJS reads every chart of the report as the browser laid it out.
const chartsJS = `Array.from(document.querySelectorAll("svg.chart"), svg => {
	const box = svg.getBoundingClientRect();
	const limit = svg.querySelector(".limit");
	return {
		Chart: svg.dataset.chart, Scope: svg.dataset.scope, Kind: svg.dataset.kind,
		Width: box.width, Height: box.height,
		Limit: limit ? Number(limit.dataset.limit) : 0,
		LimitY: limit ? limit.getBoundingClientRect().top : 0,
		RefusedCallers: limit && limit.dataset.refusedCallers !== undefined ? Number(limit.dataset.refusedCallers) : -1,
		Series: Array.from(svg.querySelectorAll(".series"), p => {
			const b = p.getBoundingClientRect();
			return {Caller: p.dataset.caller || "", Series: p.dataset.series || "", Top: b.top, Bottom: b.bottom, Length: p.getTotalLength()};
		}),
		Bars: Array.from(svg.querySelectorAll(".bar"), r => ({
			Table: Number(r.dataset.table), Rates: r.dataset.rates, Refused: Number(r.dataset.refused),
			RefusedCallers: Number(r.dataset.refusedCallers), Height: r.getBoundingClientRect().height,
		})),
	};
})`

// The HTML report of ratescope replay, made from a known log, opens in
// Chromium with no console error and no request, and its charts show the
// series the log implies.
func TestReplayReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	reportLog(t, logPath)
	htmlPath := filepath.Join(dir, "report.html")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(binDir, "ratescope"), "replay", "-quiet", "-json",
		"-rates", "api.anon=60/min,1000/day api.user=120/min,5000/day",
		"-what-if", "api.anon=80/min,1000/day",
		"-html", htmlPath, logPath)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "ratescope replay: %s", stderr.String())
	var rep replayJSON
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	require.Equal(t, int64(700+300+200+90), rep.Lines)
	require.Zero(t, rep.Skipped)
	groups := map[string]int{}
	for i, s := range rep.Scopes {
		groups[s.Scope+"/"+s.Kind] = i
	}
	require.Contains(t, groups, "api/anon")
	require.Contains(t, groups, "api/user")
	require.Contains(t, groups, "autocomplete.project/anon")
	apiAnon := rep.Scopes[groups["api/anon"]]
	require.Equal(t, int64(1), apiAnon.RefusedCallers, "only the caller at 70/min is refused: %+v", apiAnon)

	ctx := newBrowser(t)
	pl := record(t, ctx)
	pageURL := "file://" + htmlPath
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(screenshotWidth, 900),
		chromedp.Navigate(pageURL)))
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartView](chartsJS))
	require.NoError(t, err)

	byKey := map[string]chartView{}
	for _, c := range charts {
		assert.Positive(t, c.Width, "%s %s/%s drawn", c.Chart, c.Scope, c.Kind)
		assert.Positive(t, c.Height, "%s %s/%s drawn", c.Chart, c.Scope, c.Kind)
		byKey[c.Scope+"/"+c.Kind+" "+c.Chart] = c
	}
	for g := range groups {
		for _, chart := range []string{"per-minute", "peak-minute", "peak-day"} {
			assert.Contains(t, byKey, g+" "+chart)
		}
	}
	series := func(c chartView, caller string) (top, bottom float64) {
		t.Helper()
		for _, s := range c.Series {
			if s.Caller == caller {
				assert.Positive(t, s.Length, "the series of %s in %s %s/%s", caller, c.Chart, c.Scope, c.Kind)
				return s.Top, s.Bottom
			}
		}
		t.Errorf("no series of %s in %s %s/%s: %+v", caller, c.Chart, c.Scope, c.Kind, c.Series)
		return 0, 0
	}

	// Requests per minute against the limit: the caller at 70/min is drawn
	// above the line of 60/min, the one at 30/min below it.
	perMinute := byKey["api/anon per-minute"]
	assert.Equal(t, int64(60), perMinute.Limit)
	top, _ := series(perMinute, "203.0.113.7")
	assert.Less(t, top, perMinute.LimitY, "70/min drawn above the limit")
	top, _ = series(perMinute, "198.51.100.2")
	assert.Greater(t, top, perMinute.LimitY, "30/min drawn below the limit")
	user := byKey["api/user per-minute"]
	assert.Equal(t, int64(120), user.Limit)
	top, _ = series(user, "alice")
	assert.Greater(t, top, user.LimitY, "20/min drawn below 120/min")
	search := byKey["autocomplete.project/anon per-minute"]
	assert.Equal(t, int64(60), search.Limit, "the search box's starting 60/min")
	top, _ = series(search, "192.0.2.44")
	assert.Less(t, top, search.LimitY, "90 in a minute drawn above 60/min")

	// The callers by their busiest minute and day: a limit of 60/min
	// refuses one caller at least once, 1000/day none.
	peakMinute := byKey["api/anon peak-minute"]
	assert.Equal(t, int64(60), peakMinute.Limit)
	assert.Equal(t, int64(1), peakMinute.RefusedCallers)
	peakDay := byKey["api/anon peak-day"]
	assert.Equal(t, int64(1000), peakDay.Limit)
	assert.Equal(t, int64(0), peakDay.RefusedCallers)
	for _, c := range []chartView{peakMinute, peakDay} {
		require.Len(t, c.Series, 1, c.Chart)
		assert.Equal(t, "callers-above", c.Series[0].Series)
		assert.Positive(t, c.Series[0].Length, c.Chart)
	}

	// What if: under 60/min the refusals of the JSON report, under 80/min
	// none, and the bars drawn so.
	whatIf := byKey["api/anon what-if"]
	require.Len(t, whatIf.Bars, 2)
	assert.Equal(t, "60/min,1000/day", whatIf.Bars[0].Rates)
	assert.Equal(t, apiAnon.Refused, whatIf.Bars[0].Refused)
	assert.Equal(t, int64(1), whatIf.Bars[0].RefusedCallers)
	assert.Positive(t, whatIf.Bars[0].Height)
	assert.Equal(t, "80/min,1000/day", whatIf.Bars[1].Rates)
	assert.Zero(t, whatIf.Bars[1].Refused)
	assert.Zero(t, whatIf.Bars[1].Height)

	// The what-if chart and tables are labelled: each bar names its table
	// and rates; each row of the comparison names its table, which the
	// table of tables lists; the rates a what-if keeps from -rates are
	// set apart from those it changes.
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[whatIfLabels](whatIfLabelsJS))
	require.NoError(t, err)
	assert.Equal(t, whatIfLabels{
		Bars:      []string{"-rates: 60/min,1000/day", "what if 1: 80/min,1000/day"},
		Tables:    []string{"-rates", "what if 1"},
		Headers:   []string{"scope", "kind", "table", "its rates", "requests", "refused", "callers refused"},
		Rows:      []string{"api anon -rates", "api anon what if 1"},
		Same:      []string{"1000/day"},
		Changed:   []string{"80/min"},
		TableRows: []string{"-rates", "what if 1"},
	}, labels)

	// The colours are categories: the bars of the tables and the series
	// of the callers each in a colour of its own, none the limit line's,
	// and none a red or a green, which read as bad and good.
	colours, err := chromedp.Run(ctx, chromedp.Evaluate[map[string][]string](coloursJS))
	require.NoError(t, err)
	require.Len(t, colours["limit"], 1)
	for _, chart := range []string{"what-if", "per-minute"} {
		got := colours[chart]
		require.GreaterOrEqual(t, len(got), 2, chart)
		assert.Len(t, uniq(got), len(got), "%s: a colour per category: %v", chart, got)
		for _, c := range got {
			assert.NotEqual(t, colours["limit"][0], c, "%s: the limit line's colour", chart)
			assert.False(t, redOrGreen(t, c), "%s: %s reads as bad or good", chart, c)
		}
	}

	// The list of the callers refused most is the JSON report's.
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('section[data-scope="api"][data-kind="anon"] tr.caller'), tr => tr.dataset.caller)`))
	require.NoError(t, err)
	var want []string
	for _, e := range apiAnon.Top {
		want = append(want, e.Caller)
	}
	assert.Equal(t, want, rows)

	assertSelfContained(t, pl, pageURL)
}

// whatIfLabels are the labels of the what-if chart and tables of scope
// api's anonymous callers.
type whatIfLabels struct {
	Bars      []string // the text.table-name of each bar, in order
	Tables    []string // the names of table.tables
	Headers   []string // of table.what-if
	Rows      []string // scope, kind and table of each row of table.what-if
	Same      []string // the rates a what-if keeps, set apart
	Changed   []string // the rates it changes, in bold
	TableRows []string // the data-table of the bars, as table names
}

const whatIfLabelsJS = `(() => {
	const svg = document.querySelector('svg.chart[data-chart="what-if"][data-scope="api"][data-kind="anon"]');
	const names = Array.from(svg.querySelectorAll("text.table-name"), e => e.textContent);
	const byTable = {};
	for (const e of svg.querySelectorAll("text.table-name")) byTable[e.dataset.table] = e.textContent.split(":")[0];
	const rows = Array.from(document.querySelectorAll('table.what-if tr[data-scope="api"][data-kind="anon"]'));
	return {
		Bars: names,
		Tables: Array.from(document.querySelectorAll("table.tables tr[data-table] td:first-child"), e => e.textContent),
		Headers: Array.from(document.querySelectorAll("table.what-if th"), e => e.textContent),
		Rows: rows.map(r => Array.from(r.cells).slice(0, 3).map(c => c.textContent).join(" ")),
		Same: Array.from(document.querySelectorAll("table.what-if .same"), e => e.textContent),
		Changed: Array.from(document.querySelectorAll("table.what-if td b"), e => e.textContent),
		TableRows: Array.from(svg.querySelectorAll(".bar"), r => byTable[r.dataset.table] || ""),
	};
})()`

// coloursJS reads the colours the browser drew: the bars of api/anon's
// what-if chart, the caller series of its per-minute chart, and its limit
// line.
const coloursJS = `(() => {
	const chart = name => document.querySelector('svg.chart[data-chart="' + name + '"][data-scope="api"][data-kind="anon"]');
	return {
		"what-if": Array.from(chart("what-if").querySelectorAll(".bar"), e => getComputedStyle(e).fill),
		"per-minute": Array.from(chart("per-minute").querySelectorAll(".series"), e => getComputedStyle(e).stroke),
		"limit": Array.from(chart("per-minute").querySelectorAll(".limit"), e => getComputedStyle(e).stroke),
	};
})()`

func uniq(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// redOrGreen reports whether the CSS colour c, "rgb(r, g, b)", is a
// saturated red or green: a hue within 20° of red or of green.
func redOrGreen(t *testing.T, c string) bool {
	t.Helper()
	var r, g, b float64
	_, err := fmt.Sscanf(c, "rgb(%g, %g, %g)", &r, &g, &b)
	require.NoError(t, err, c)
	hi, lo := max(r, g, b), min(r, g, b)
	if hi == 0 || (hi-lo)/hi < 0.4 {
		return false // grey or pale
	}
	var hue float64
	switch hi {
	case r:
		hue = math.Mod((g-b)/(hi-lo)*60+360, 360)
	case g:
		hue = (b-r)/(hi-lo)*60 + 120
	default:
		hue = (r-g)/(hi-lo)*60 + 240
	}
	return hue < 20 || hue > 340 || math.Abs(hue-120) < 20
}

// screenshot takes a PNG of the page from its top, width by height CSS
// pixels at scale 1, beyond the viewport if need be.
func screenshot(width int, height float64) chromedp.Action[[]byte] {
	return func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		yes := true
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:                page.CaptureScreenshotFormatPng,
			Clip:                  &page.Viewport{Width: float64(width), Height: math.Ceil(height), Scale: 1},
			FromSurface:           &yes,
			CaptureBeyondViewport: &yes,
		})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	}
}

// assertSelfContained checks that the page at pageURL asked for nothing but
// itself and wrote no error or warning.
func assertSelfContained(t *testing.T, pl *pageLog, pageURL string) {
	t.Helper()
	for _, x := range pl.Exchanges("") {
		assert.Equal(t, pageURL, x.URL, "a request of the report")
	}
	assert.Empty(t, pl.Console(), "the report's console")
}

// The report of the how-to "choose limits from your access logs": the
// generated day of its examples (benchmarks/cmd/genlog), replayed with its
// flags. It opens with no console error and no request, every chart and
// series is drawn, its figures are those of -json; and the test takes the
// screenshot the how-to shows.
func TestReplayReportOfTheHowTo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	genlog := filepath.Join(dir, "genlog")
	build := exec.Command("go", "build", "-o", genlog, "./cmd/genlog")
	build.Dir = "../benchmarks"
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building genlog: %s", out)
	logPath := filepath.Join(dir, "access.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	gen := exec.Command(genlog, "-lines", "300000", "-callers", "5000")
	gen.Stdout = logFile
	require.NoError(t, gen.Run())
	require.NoError(t, logFile.Close())

	htmlPath := filepath.Join(dir, "report.html")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(binDir, "ratescope"), "replay", "-quiet", "-json", "-top", "5",
		"-rates", "api.anon=60/min,1000/day",
		"-what-if", "api.anon=120/min,5000/day;api.anon=30/min,500/day",
		"-html", htmlPath, logPath)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "ratescope replay: %s", stderr.String())
	var rep replayJSON
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Equal(t, int64(300000), rep.Lines)
	require.NotEmpty(t, rep.Scopes)
	require.Equal(t, "api", rep.Scopes[0].Scope)
	require.Equal(t, "anon", rep.Scopes[0].Kind)
	apiAnon := rep.Scopes[0]

	ctx := newBrowser(t)
	pl := record(t, ctx)
	pageURL := "file://" + htmlPath
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(screenshotWidth, 900),
		chromedp.Navigate(pageURL)))
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartView](chartsJS))
	require.NoError(t, err)
	require.NotEmpty(t, charts)
	var groups []string
	for _, c := range charts {
		assert.Positive(t, c.Width, "%s %s/%s drawn", c.Chart, c.Scope, c.Kind)
		assert.Positive(t, c.Height, "%s %s/%s drawn", c.Chart, c.Scope, c.Kind)
		for _, s := range c.Series {
			assert.Positive(t, s.Length, "a series of %s %s/%s: %+v", c.Chart, c.Scope, c.Kind, s)
		}
		if c.Chart == "per-minute" {
			groups = append(groups, c.Scope+"/"+c.Kind)
		}
		if c.Scope != "api" || c.Kind != "anon" {
			continue
		}
		switch c.Chart {
		case "per-minute":
			assert.NotEmpty(t, c.Series, "the top callers of api/anon")
		case "peak-day":
			// A log of one day with no minute over 60: the callers the
			// limiter refused are those above 1000 in the day.
			assert.Equal(t, int64(1000), c.Limit)
			assert.Equal(t, apiAnon.RefusedCallers, c.RefusedCallers)
		case "what-if":
			require.Len(t, c.Bars, 3)
			assert.Equal(t, apiAnon.Refused, c.Bars[0].Refused)
			assert.Equal(t, apiAnon.RefusedCallers, c.Bars[0].RefusedCallers)
			for _, b := range c.Bars {
				assert.Positive(t, b.Height, "the bar of %s", b.Rates)
			}
		}
	}
	var want []string
	for _, s := range rep.Scopes {
		want = append(want, s.Scope+"/"+s.Kind)
	}
	assert.Equal(t, want, groups, "a section per scope and kind of -json, in its order")
	// The headings of the chart and the list of the top callers say how
	// many callers they leave out; the note on sliding windows is once, at
	// the end of the what-if section.
	var perMinute int
	for _, c := range charts {
		if c.Chart == "per-minute" && c.Scope == "api" && c.Kind == "anon" {
			perMinute = len(c.Series)
		}
	}
	headings, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#api-anon h3.per-minute, #api-anon h3.top, #what-if p.windows"), e => e.textContent)`))
	require.NoError(t, err)
	require.Len(t, headings, 3)
	assert.Equal(t, fmt.Sprintf("Requests per minute: top %d of %d callers", perMinute, apiAnon.Callers), headings[0])
	assert.Equal(t, fmt.Sprintf("Callers refused most: top %d of %d callers", len(apiAnon.Top), apiAnon.Callers), headings[1])
	assert.Contains(t, headings[2], "against 120/min: 340 refused, not 300")
	assertSelfContained(t, pl, pageURL)

	// The screenshot: the top of the page and the first scope and kind,
	// whose charts the how-to explains, 1200 pixels wide.
	takeScreenshot(t, ctx, `document.querySelector("section.group").getBoundingClientRect().bottom + window.scrollY + 16`, screenshotPath)
}

// takeScreenshot takes the page of ctx from its top down to bottom, a
// JavaScript expression of the page's CSS pixels, screenshotWidth pixels
// wide, and writes it to path with -update-screenshot, to a temporary
// directory otherwise.
func takeScreenshot(t *testing.T, ctx context.Context, bottom, path string) {
	t.Helper()
	height, err := chromedp.Run(ctx, chromedp.Evaluate[float64](bottom))
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, screenshot(screenshotWidth, height))
	require.NoError(t, err)
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	require.NoError(t, err)
	assert.Equal(t, screenshotWidth, cfg.Width)
	assert.Equal(t, int(math.Ceil(height)), cfg.Height)
	if !*updateScreenshot {
		path = filepath.Join(t.TempDir(), filepath.Base(path))
	}
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot %s: %dx%d, %d bytes", path, cfg.Width, cfg.Height, len(shot))
}
