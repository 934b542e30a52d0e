package replay_test

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/cmd/ratescope/internal/replay"
	"github.com/ratescope/ratescope/core"
)

// page returns the HTML report of log replayed with opt.
func page(t *testing.T, opt replay.Options, log string) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, run(t, opt, log).WriteHTML(&b))
	return b.String()
}

// chart returns the SVG of one chart of the page.
func chart(t *testing.T, page, name, scope, kind string) string {
	t.Helper()
	open := fmt.Sprintf(`<svg class="chart" data-chart="%s" data-scope="%s" data-kind="%s"`, name, scope, kind)
	i := strings.Index(page, open)
	require.GreaterOrEqual(t, i, 0, "no chart %s of %s %s", name, scope, kind)
	j := strings.Index(page[i:], "</svg>")
	require.Positive(t, j)
	return page[i : i+j]
}

var (
	strokeRE = regexp.MustCompile(`<(?:path|line|rect) class="(series|limit|bar)"[^>]*? (?:stroke|fill)="(#[0-9a-f]{6})"`)
	topRE    = regexp.MustCompile(`data-y-top="([0-9.]+)" data-y-scale="(log|linear)"`)
	pointRE  = regexp.MustCompile(`([0-9.]+) ([0-9.]+)`)
	limitXRE = regexp.MustCompile(`<line class="limit"[^>]* x1="([0-9.]+)"`)
)

// hue returns the hue of a colour #rrggbb in degrees, and its saturation
// from 0 to 1.
func hue(t *testing.T, c string) (h, sat float64) {
	t.Helper()
	v, err := strconv.ParseUint(c[1:], 16, 32)
	require.NoError(t, err)
	r, g, b := float64(v>>16)/255, float64(v>>8&255)/255, float64(v&255)/255
	hi, lo := max(r, g, b), min(r, g, b)
	if hi == lo {
		return 0, 0
	}
	switch hi {
	case r:
		h = 60 * (g - b) / (hi - lo)
	case g:
		h = 60 * (2 + (b-r)/(hi-lo))
	default:
		h = 60 * (4 + (r-g)/(hi-lo))
	}
	if h < 0 {
		h += 360
	}
	return h, (hi - lo) / hi
}

// TestChartColours: in every chart the callers (or the tables) are drawn
// in colours of their own, none the limit's, and none a red or a green
// that would read as bad or good.
func TestChartColours(t *testing.T) {
	t.Parallel()
	var all [][]req
	for i := range 6 {
		all = append(all, paced(fmt.Sprintf("203.0.113.%d", i+1), "", "/api/x", t0, time.Minute/time.Duration(70+i), 140))
	}
	p := page(t, replay.Options{WhatIf: []string{"api.anon=30/min", "api.anon=90/min", "api.anon=120/min"}}, combined(sorted(all...), false))
	for _, name := range []string{"per-minute", "peak-minute", "what-if"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seen := map[string]string{}
			var limit string
			for _, m := range strokeRE.FindAllStringSubmatch(chart(t, p, name, "api", "anon"), -1) {
				what, colour := m[1], m[2]
				if what == "limit" {
					limit = colour
					continue
				}
				h, sat := hue(t, colour)
				if sat > 0.5 {
					assert.False(t, h < 20 || h > 340, "%s %s is a red", what, colour)
					assert.False(t, h > 90 && h < 160, "%s %s is a green", what, colour)
				}
				if name != "peak-minute" {
					assert.NotContains(t, seen, colour, "%s and %s", seen[colour], m[0])
				}
				seen[colour] = m[0]
			}
			assert.NotEmpty(t, seen)
			if name != "what-if" {
				require.NotEmpty(t, limit, "the limit line's colour")
				assert.NotContains(t, seen, limit, "a series in the limit's colour")
			}
		})
	}
}

// yAt returns the y at x of the step path d: that of its last point at or
// left of x.
func yAt(t *testing.T, d string, x float64) float64 {
	t.Helper()
	y := -1.0
	for _, m := range pointRE.FindAllStringSubmatch(d, -1) {
		px, _ := strconv.ParseFloat(m[1], 64)
		py, _ := strconv.ParseFloat(m[2], 64)
		if px <= x {
			y = py
		}
	}
	require.GreaterOrEqual(t, y, 0.0, "no point left of %v in %s", x, d)
	return y
}

// TestChartScales: the y axes fit their data (their top is the busiest
// figure or the limit, not twice either), and a few callers or requests
// beside many stay visible: four callers above a day limit among 2,000
// are drawn at least a tenth of the chart's height above the x axis, and
// so is one of them, a poller at 2 requests a minute under a limit of 60.
func TestChartScales(t *testing.T) {
	t.Parallel()
	const baseline, height = 260 - 36, 260 - 16 - 36
	var all [][]req
	for i := range 2000 {
		all = append(all, []req{{t: t0.Add(time.Duration(i) * time.Second), addr: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), path: "/api/x"}})
	}
	for i := range 3 {
		all = append(all, paced(fmt.Sprintf("203.0.113.%d", i+1), "", "/api/x", t0, 12*time.Second, 1200))
	}
	all = append(all, paced("198.51.100.7", "", "/api/x", t0, 30*time.Second, 1200))
	var opt replay.Options
	opt.Settings.Rates = core.RateTable{"api.anon": "60/min,1000/day"}
	p := page(t, opt, combined(sorted(all...), false))

	for _, tc := range []struct {
		name  string
		chart string
		top   float64
	}{
		{name: "callers by busiest day", chart: "peak-day", top: 2004},
		{name: "callers by busiest minute", chart: "peak-minute", top: 2004},
		{name: "requests per minute", chart: "per-minute", top: 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svg := chart(t, p, tc.chart, "api", "anon")
			m := topRE.FindStringSubmatch(svg)
			require.NotNil(t, m)
			assert.Equal(t, strconv.FormatFloat(tc.top, 'f', -1, 64), m[1], "the top of the y axis")
			assert.Contains(t, svg, ">"+strconv.FormatFloat(tc.top, 'f', -1, 64)+"</text>", "the top labelled")
			assert.Equal(t, "log", m[2])
		})
	}
	day := chart(t, p, "peak-day", "api", "anon")
	lx, err := strconv.ParseFloat(limitXRE.FindStringSubmatch(day)[1], 64)
	require.NoError(t, err)
	d := regexp.MustCompile(`data-series="callers-above"[^>]* d="([^"]+)"`).FindStringSubmatch(day)
	require.NotNil(t, d)
	assert.GreaterOrEqual(t, baseline-yAt(t, d[1], lx), 0.1*height, "4 callers above the limit, of 2004")

	perMinute := chart(t, p, "per-minute", "api", "anon")
	d = regexp.MustCompile(`data-caller="198.51.100.7"[^>]* d="([^"]+)"`).FindStringSubmatch(perMinute)
	require.NotNil(t, d, "the poller drawn")
	assert.GreaterOrEqual(t, baseline-yAt(t, d[1], 100), 0.1*height, "2 requests a minute under 60/min")
}

// TestWhatIfLabels: the what-if tables are named ("-rates", "what if 1",
// ...) in the list of tables, in the rows of the comparison and under the
// bars, and a row marks the rates a table leaves as they are; the note on
// windows is on the page once, whatever the number of scopes compared.
func TestWhatIfLabels(t *testing.T) {
	t.Parallel()
	rs := sorted(
		paced("203.0.113.7", "", "/api/records", t0, time.Minute/70, 700),
		paced("198.51.100.9", "alice", "/api/records", t0, time.Second/12, 7000),
	)
	opt := replay.Options{WhatIf: []string{"api.anon=120/min,1000/day api.user=800/min,20000/day", "api.anon=30/min,1000/day"}}
	opt.Settings.Rates = core.RateTable{"api.anon": "60/min,1000/day"}
	p := page(t, opt, combined(rs, false))
	for _, s := range []string{
		`<tr data-table="0"><td>-rates</td><td><code>api.anon=60/min,1000/day</code></td></tr>`,
		`<tr data-table="1"><td>what if 1</td><td><code>api.anon=120/min,1000/day api.user=800/min,20000/day, over -rates</code></td></tr>`,
		`<tr data-table="2"><td>what if 2</td>`,
		`<tr data-scope="api" data-kind="anon" data-table="0"><td>api</td><td>anon</td><td>-rates</td><td>60/min,1000/day</td>`,
		`<tr data-scope="api" data-kind="anon" data-table="1"><td>api</td><td>anon</td><td>what if 1</td><td><b>120/min</b>,<span class="same">1000/day</span></td>`,
		`<tr data-scope="api" data-kind="user" data-table="2"><td>api</td><td>user</td><td>what if 2</td><td><span class="same">600/min</span>,<span class="same">20000/day</span></td>`,
	} {
		assert.Contains(t, p, s)
	}
	for _, kind := range []string{"anon", "user"} {
		svg := chart(t, p, "what-if", "api", kind)
		for i, name := range []string{"-rates", "what if 1", "what if 2"} {
			assert.Regexp(t, fmt.Sprintf(`<text class="table-name" data-table="%d"[^>]*>%s: `, i, name), svg)
		}
	}
	assert.Equal(t, 1, strings.Count(p, `class="note windows"`), "the note once")
	assert.Equal(t, 1, strings.Count(p, template.HTMLEscapeString(replay.WindowsNote)))
	assert.NotContains(t, replay.WindowsNote, ".md", "no bare path")
}

// TestFindings: the page opens on what matters, before the first scope's
// charts: how much -rates refuses, and the callers it refuses most, each
// with what it looks like. A day of a new user's log: a scraper above
// 60/min for 20 minutes, a poller every 30 s that only the day limit
// refuses, an office whose staff sign in from the address its anonymous
// visitors share, a signed-in user in a burst above 600/min, and 300
// ordinary callers, none refused.
func TestFindings(t *testing.T) {
	t.Parallel()
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	all := [][]req{
		paced("198.51.100.23", "", "/api/records", day.Add(10*time.Hour), time.Minute/80, 80*20),
		paced("203.0.113.50", "", "/api/status", day, 30*time.Second, 2880),
		paced("192.0.2.1", "", "/api/records", day.Add(9*time.Hour), 20*time.Second, 1440),
		paced("198.51.100.80", "carol", "/api/export", day.Add(14*time.Hour), time.Minute/700, 700*3),
	}
	for i := range 5 {
		all = append(all, paced("192.0.2.1", fmt.Sprintf("staff%d", i), "/api/records", day.Add(9*time.Hour+time.Duration(i)*time.Minute), 10*time.Minute, 48))
	}
	for i := range 300 {
		all = append(all, paced(fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), "", "/api/records", day.Add(time.Duration(i)*4*time.Minute), 5*time.Second, 6))
	}
	var opt replay.Options
	opt.Settings.Rates = core.RateTable{"api.anon": "60/min,1000/day"}
	p := page(t, opt, combined(sorted(all...), false))

	i := strings.Index(p, `<section id="findings">`)
	require.Positive(t, i)
	assert.Less(t, i, strings.Index(p, `<section class="group"`), "the findings first")
	section := p[i : i+strings.Index(p[i:], "</section>")]
	assert.Contains(t, section, `<p class="verdict">3220 of 10060 requests limited (32.0%) would be refused, from 4 of 309 callers. The callers refused most:</p>`)
	rows := regexp.MustCompile(`<tr class="finding" data-caller="([^"]+)" data-scope="api" data-kind="(anon|user)">.*<td>([^<]*)</td></tr>`).FindAllStringSubmatch(section, -1)
	var got [][]string
	for _, r := range rows {
		got = append(got, r[1:])
	}
	assert.Equal(t, [][]string{
		{"203.0.113.50", "anon", "at most 2 a minute, all day, refused by the day limit: like a poller"},
		{"198.51.100.23", "anon", "above 60/min in 20 minutes: steady, like a scraper or a batch job"},
		{"192.0.2.1", "anon", "5 signed-in users came from this address: an office or a NAT, whose anonymous visitors share one count; refused by the day limit"},
		{"carol", "user", "above 600/min in 3 minutes: a heavy user&#39;s burst"},
	}, got, "by refused")
	assert.Contains(t, section, `<td>10:00-10:19</td>`, "the scraper's hours")
	assert.Contains(t, section, `<td>all day</td>`, "the poller's")
	assert.Contains(t, section, `<td><b>80</b> of 60</td>`, "the scraper's busiest minute, above the limit")

	var text bytes.Buffer
	require.NoError(t, run(t, opt, combined(sorted(all...), false)).WriteText(&text))
	assert.Contains(t, text.String(), "\n3220 of 10060 requests limited (32.0%) refused, from 4 of 309 callers; refused most (what each looks like is a guess from its figures):\n"+
		"  203.0.113.50   api anon  1880 of 2880 refused  at most 2 a minute, all day, refused by the day limit: like a poller\n"+
		"  198.51.100.23  api anon  ", "the text's first lines")

	// Nothing refused: said so, and no list.
	p = page(t, replay.Options{}, combined(sorted(all[4:]...), false))
	assert.Contains(t, p, `<p class="verdict">None of the 2040 requests limited, from 305 callers, would be refused.</p>`)
	assert.NotContains(t, p, `class="finding"`)
}
