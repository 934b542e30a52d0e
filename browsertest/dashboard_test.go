package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// dashboardScreenshot is the picture of the dashboard's queries that
// the how-to shows, relative to this module.
const dashboardScreenshot = "../docs/grafana/ratescope.png"

// The jobs of the test's Prometheus: one scrape of each metrics module.
const (
	promJob = "prometheus-module"
	otelJob = "otel-module"
)

// The load of TestDashboardScreenshot, and the outage of Redis within it.
const (
	loadFor     = 16 * time.Second
	pauseAt     = 6 * time.Second
	pauseFor    = 4 * time.Second
	loadTick    = 100 * time.Millisecond
	rateWindow  = "4s" // $__rate_interval at a scrape a second
	promTimeout = 30 * time.Second
)

// startPrometheus runs Debian's prometheus (scripts/install-deps.sh
// installs it) scraping targets, a job name to an address, every second,
// and returns the URL of its HTTP API once it is ready. It is stopped
// when the test ends.
func startPrometheus(t *testing.T, targets map[string]string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "prometheus not found in $PATH: run scripts/install-deps.sh (make test does) to install Debian's prometheus; this test never skips")
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n")
	for _, job := range slices.Sorted(maps.Keys(targets)) {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: [%q]\n", job, targets[job])
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg.String()), 0o644))
	return startServer(t, bin, func(addr string) []string {
		return []string{"--config.file=" + cfgPath, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr, "--log.level=warn"}
	}, "/-/ready", promTimeout)
}

// waitScraped waits until the Prometheus at base has scraped n targets
// successfully: it reads its configuration's targets a few seconds after
// it starts.
func waitScraped(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(promTimeout)
	for {
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape("sum(up)"))
		require.NoError(t, err)
		var answer struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		_ = resp.Body.Close()
		require.NoError(t, err)
		if r := answer.Data.Result; len(r) == 1 && r[0].Value[1] == strconv.Itoa(n) {
			return
		}
		require.True(t, time.Now().Before(deadline), "prometheus has not scraped its %d targets after %v: %+v", n, promTimeout, answer)
		time.Sleep(100 * time.Millisecond)
	}
}

// promSeries is one series of a range query's answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"` // [unix seconds, "value"]
}

// queryRange asks Prometheus at base for expr from start to end, a point a
// second.
func queryRange(t *testing.T, base, expr string, start, end time.Time) []promSeries {
	t.Helper()
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(start.Unix(), 10)},
		"end": {strconv.FormatInt(end.Unix(), 10)}, "step": {"1"}}
	resp, err := http.Get(base + "/api/v1/query_range?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	require.Equal(t, "success", answer.Status, "%s: %s", expr, answer.Error)
	return answer.Data.Result
}

// panelQuery is a query of a dashboard's panel for one job, as Grafana
// sends it, and what Prometheus answered.
type panelQuery struct {
	Legend string
	Series []drawnSeries
}

// drawnSeries is a series of an answer with its legend, its values a
// second (NaN where Prometheus has none).
type drawnSeries struct {
	Name   string
	Values []float64
}

// legend writes format with the labels of metric, as Grafana does.
func legend(format string, metric map[string]string) string {
	out := format
	for k, v := range metric {
		out = strings.ReplaceAll(out, "{{"+k+"}}", v)
	}
	return out
}

// The dashboard's queries, run by a real Prometheus (Debian's) that
// scrapes both metrics modules, fed the same decisions of a limiter on a
// real Redis under 16 seconds of load with Redis paused 4 seconds: every
// query of every panel answers, for both jobs, series with values, and
// the same series for both. The test draws the answers on a page of its
// own (not Grafana, which the machine has not) and takes the screenshot
// the how-to shows.
func TestDashboardScreenshot(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	m := newBothMetrics(t)
	promSrv := httptest.NewServer(m.Prom)
	t.Cleanup(promSrv.Close)
	otelSrv := httptest.NewServer(m.OTel)
	t.Cleanup(otelSrv.Close)
	base := startPrometheus(t, map[string]string{
		promJob: strings.TrimPrefix(promSrv.URL, "http://"),
		otelJob: strings.TrimPrefix(otelSrv.URL, "http://"),
	})

	waitScraped(t, base, 2)

	// A limiter on a real Redis: api allows an anonymous caller 5 a
	// second and a user 20; login 3 a minute, and fails closed.
	srv := redistest.ServerFor(t)
	// Resumed before it is closed (cleanups run last first), should the
	// test end while it is paused.
	t.Cleanup(func() { _ = srv.Resume() })
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	discard := slog.New(slog.DiscardHandler)
	store, err := redisstore.New(redisstore.Config{Client: client, Prefix: "dashboard:" + t.Name() + ":",
		Timeout: 100 * time.Millisecond, BreakerBackoff: time.Second, Logger: discard})
	require.NoError(t, err)
	lim, err := core.New(core.Config{
		Store: store,
		Scopes: []core.Scope{
			{Name: "api", Anon: []core.Rate{{Limit: 5, Period: time.Second}}, User: []core.Rate{{Limit: 20, Period: time.Second}}},
			{Name: "login", Anon: []core.Rate{core.PerMinute(3)}, User: []core.Rate{core.PerMinute(3)}, FailMode: core.FailClosed},
		},
		NumProxies: new(0),
		Observe:    m.Observe,
		Logger:     discard,
	})
	require.NoError(t, err)
	m.Watch(t, lim)
	m.Watch(t, store)

	// The load, every tick: 4 new anonymous callers in api (allowed), a
	// crawler asking api twice (over 5 a second), alice signed in
	// (allowed), and every other tick a guesser at login (over 3 a
	// minute). Redis is paused from pauseAt for pauseFor.
	ctx := context.Background()
	start := time.Now()
	tick := time.NewTicker(loadTick)
	paused := false
	var n int
	for now := range tick.C {
		elapsed := now.Sub(start)
		if elapsed >= loadFor {
			break
		}
		if !paused && elapsed >= pauseAt && elapsed < pauseAt+pauseFor {
			require.NoError(t, srv.Pause())
			paused = true
		} else if paused && elapsed >= pauseAt+pauseFor {
			require.NoError(t, srv.Resume())
			paused = false
		}
		n++
		for i := range 4 {
			_, err := lim.Allow(ctx, "api", lim.AddrCaller(netip.MustParseAddr(fmt.Sprintf("192.0.2.%d", (n*4+i)%250+1))))
			require.NoError(t, err)
		}
		for range 2 {
			_, err := lim.Allow(ctx, "api", lim.AddrCaller(netip.MustParseAddr("203.0.113.7")))
			require.NoError(t, err)
		}
		_, err := lim.Allow(ctx, "api", core.UserCaller("alice"))
		require.NoError(t, err)
		if n%2 == 0 {
			_, err := lim.Allow(ctx, "login", lim.AddrCaller(netip.MustParseAddr("198.51.100.9")))
			require.NoError(t, err)
		}
	}
	tick.Stop()
	if paused {
		require.NoError(t, srv.Resume())
	}
	// Two more scrapes, so that the last second is in.
	time.Sleep(2 * time.Second)
	end := time.Now()

	// Every query of every panel, for each job.
	jobs := []string{promJob, otelJob}
	answers := map[string]map[int][]panelQuery{} // job, panel ID
	for _, job := range jobs {
		answers[job] = map[int][]panelQuery{}
		for _, p := range d.Panels {
			for _, target := range p.Targets {
				expr := strings.NewReplacer(`$job`, job, `$__rate_interval`, rateWindow).Replace(target.Expr)
				result := queryRange(t, base, expr, start, end)
				q := panelQuery{Legend: target.LegendFormat}
				for _, s := range result {
					ds := drawnSeries{Name: legend(target.LegendFormat, s.Metric), Values: make([]float64, int(end.Unix()-start.Unix())+1)}
					for i := range ds.Values {
						ds.Values[i] = math.NaN()
					}
					for _, v := range s.Values {
						at := int(v[0].(float64)) - int(start.Unix())
						f, err := strconv.ParseFloat(v[1].(string), 64)
						require.NoError(t, err)
						if at >= 0 && at < len(ds.Values) {
							ds.Values[at] = f
						}
					}
					q.Series = append(q.Series, ds)
				}
				slices.SortFunc(q.Series, func(a, b drawnSeries) int { return strings.Compare(a.Name, b.Name) })
				finite := slices.ContainsFunc(q.Series, func(s drawnSeries) bool {
					return slices.ContainsFunc(s.Values, func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) })
				})
				assert.True(t, finite, "%s, %s %s (%s): no value in %d series", job, p.Title, target.RefID, expr, len(result))
				answers[job][p.ID] = append(answers[job][p.ID], q)
			}
		}
	}
	for _, p := range d.Panels {
		names := func(job string) (out []string) {
			for _, q := range answers[job][p.ID] {
				for _, s := range q.Series {
					out = append(out, s.Name)
				}
			}
			return out
		}
		assert.Equal(t, names(promJob), names(otelJob), "%s: the same series for both modules", p.Title)
	}

	page := filepath.Join(t.TempDir(), "dashboard.html")
	require.NoError(t, os.WriteFile(page, []byte(dashboardPage(d, jobs, answers, start)), 0o644))
	bctx := newBrowser(t)
	pl := record(t, bctx)
	require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(screenshotWidth, 900), chromedp.Navigate("file://"+page)))
	drawn, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("svg polyline").length`))
	require.NoError(t, err)
	assert.Positive(t, drawn)
	assertSelfContained(t, pl, "file://"+page)
	takeScreenshot(t, bctx, `document.body.getBoundingClientRect().bottom + window.scrollY + 8`, dashboardScreenshot)
}

// seriesColours colour the series of a panel by their order, the same
// name in the same colour in both columns.
var seriesColours = []string{"#0072b2", "#e69f00", "#cc79a7", "#009e73", "#56b4e9", "#d55e00", "#6a3d9a", "#a6761d"}

// dashboardPage draws the answers: a row per panel, a column per job.
func dashboardPage(d dashboard, jobs []string, answers map[string]map[int][]panelQuery, start time.Time) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>ratescope dashboard queries</title><style>
body{font:13px/1.35 system-ui,sans-serif;margin:16px;color:#222;background:#fff;width:1168px}
h1{font-size:17px;margin:0 0 4px}p{margin:0 0 10px;color:#555}
.row{display:grid;grid-template-columns:1fr 1fr;gap:12px;margin-bottom:10px}
.panel{border:1px solid #ddd;border-radius:4px;padding:6px 8px}
.panel h2{font-size:13px;margin:0 0 2px}.panel .job{color:#777;font-weight:normal}
svg{display:block}.legend{display:flex;flex-wrap:wrap;gap:0 12px;font-size:12px}
.legend span::before{content:"";display:inline-block;width:10px;height:3px;margin-right:4px;vertical-align:middle;background:var(--c)}
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>ratescope dashboard (docs/grafana/ratescope.json): its queries, run by Prometheus, drawn by a test</h1>\n")
	fmt.Fprintf(&b, "<p>Not Grafana: browsertest's TestDashboardScreenshot ran each panel's PromQL in Prometheus %s, which scraped both metrics modules every second, fed the same decisions of a limiter on Redis under %v of load from %s UTC, Redis paused from %v to %v. Left: job %s (ratescope/prometheus); right: job %s (ratescope/otel through the OpenTelemetry Prometheus exporter).</p>\n",
		html.EscapeString(prometheusVersion()), loadFor, start.UTC().Format("15:04:05"), pauseAt, pauseAt+pauseFor, promJob, otelJob)
	for _, p := range d.Panels {
		b.WriteString(`<div class="row">`)
		for _, job := range jobs {
			qs := answers[job][p.ID]
			fmt.Fprintf(&b, `<div class="panel"><h2>%s <span class="job">job=%s</span></h2>`, html.EscapeString(p.Title), job)
			b.WriteString(drawPanel(qs, p.FieldConfig.Defaults.Unit))
			b.WriteString("</div>")
		}
		b.WriteString("</div>\n")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// drawPanel draws the series of a panel's queries on one chart, from 0
// to the largest value, with its unit, a second a point, and the seconds
// Redis was paused shaded.
func drawPanel(qs []panelQuery, unit string) string {
	const w, h, padL, padB = 560, 130, 52, 26
	top := 0.0
	var all []drawnSeries
	for _, q := range qs {
		for _, s := range q.Series {
			all = append(all, s)
			for _, v := range s.Values {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					top = max(top, v)
				}
			}
		}
	}
	if top == 0 {
		top = 1
	}
	n := 1
	for _, s := range all {
		n = max(n, len(s.Values))
	}
	x := func(second float64) float64 { return float64(padL) + second/float64(max(n-1, 1))*float64(w-padL-4) }
	y := func(v float64) float64 { return float64(h-padB) - v/top*float64(h-padB-6) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" viewBox="0 0 %d %d" font-size="11">`, w, h, w, h)
	from, to := x(pauseAt.Seconds()), x((pauseAt + pauseFor).Seconds())
	fmt.Fprintf(&b, `<rect x="%.1f" y="0" width="%.1f" height="%d" fill="#f1f1f1"/><text x="%.1f" y="10" text-anchor="middle" fill="#888">Redis paused</text>`, from, to-from, h-padB, (from+to)/2)
	fmt.Fprintf(&b, `<line x1="%d" y1="0" x2="%d" y2="%d" stroke="#bbb"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#bbb"/>`, padL, padL, h-padB, padL, h-padB, w, h-padB)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text><text x="%d" y="%d" text-anchor="end">0</text>`, padL-4, y(top)+4, formatValue(top, unit), padL-4, h-padB)
	for sec := 0; sec < n; sec += 5 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#777">%ds</text>`, x(float64(sec)), h-padB+12, sec)
	}
	for i, s := range all {
		var pts []string
		for j, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(j)), y(v)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke-width="1.5" stroke="%s" points="%s"/>`, seriesColours[i%len(seriesColours)], strings.Join(pts, " "))
	}
	b.WriteString("</svg>")
	b.WriteString(`<div class="legend">`)
	for i, s := range all {
		fmt.Fprintf(&b, `<span style="--c:%s">%s</span>`, seriesColours[i%len(seriesColours)], html.EscapeString(s.Name))
	}
	b.WriteString("</div>")
	return b.String()
}

// formatValue writes v in the dashboard's unit: reqps, s or short.
func formatValue(v float64, unit string) string {
	switch unit {
	case "reqps":
		return strconv.FormatFloat(v, 'g', 3, 64) + "/s"
	case "s":
		if v < 1 {
			return strconv.FormatFloat(v*1000, 'g', 3, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'g', 3, 64) + " s"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// prometheusVersion is the first line of prometheus --version, shortened
// to its name and version.
func prometheusVersion() string {
	out, err := exec.Command("prometheus", "--version").CombinedOutput()
	if err != nil {
		return "(version unknown)"
	}
	f := strings.Fields(string(out))
	if len(f) >= 3 {
		return strings.TrimSuffix(f[2], "+ds")
	}
	return "(version unknown)"
}
