package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/metricstest"
	rsotel "github.com/ratescope/ratescope/otel"
	rsprom "github.com/ratescope/ratescope/prometheus"
)

// dashboardPath is the Grafana dashboard of the docs, relative to this
// module.
const dashboardPath = "../docs/grafana/ratescope.json"

// bothMetrics are the two metrics modules, fed the same decisions: the
// prometheus module's Collector in a registry of its own, and the otel
// module's Recorder on an SDK MeterProvider read by the OpenTelemetry
// Prometheus exporter, with its default settings, in another.
type bothMetrics struct {
	collector *rsprom.Collector
	recorder  *rsotel.Recorder
	// Prom and OTel serve each registry in the Prometheus text format, as
	// an application serves GET /metrics.
	Prom, OTel http.Handler
}

func newBothMetrics(t *testing.T) *bothMetrics {
	t.Helper()
	collector, err := rsprom.New(rsprom.Config{})
	require.NoError(t, err)
	m := &bothMetrics{collector: collector}
	promReg := prom.NewRegistry()
	require.NoError(t, promReg.Register(m.collector))
	otelReg := prom.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(otelReg))
	require.NoError(t, err)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	m.recorder, err = rsotel.New(rsotel.Config{MeterProvider: provider})
	require.NoError(t, err)
	m.Prom = promhttp.HandlerFor(promReg, promhttp.HandlerOpts{})
	m.OTel = promhttp.HandlerFor(otelReg, promhttp.HandlerOpts{})
	return m
}

// Observe gives e to both modules: the limiters' Config.Observe.
func (m *bothMetrics) Observe(ctx context.Context, e core.Event) {
	m.collector.Observe(ctx, e)
	m.recorder.Observe(ctx, e)
}

// Watch watches v in both modules.
func (m *bothMetrics) Watch(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, m.collector.Watch(v))
	require.NoError(t, m.recorder.Watch(v))
}

// scrapeText GETs h as Prometheus does, in the text format, and parses it.
func scrapeText(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// exporterOwn reports whether a family or a label is the exporter's own,
// added to every application's metrics: target_info (the SDK's Resource)
// and the otel_scope_ labels (the instrumentation scope), which
// WithoutTargetInfo and WithoutScopeInfo leave out.
func exporterOwn(name string) bool {
	return name == "target_info" || strings.HasPrefix(name, "otel_scope_")
}

// samples returns every sample of families as a line of the text format,
// sorted: `name{label="value",...} value`, with the labels sorted and the
// exporter's own left out, and a histogram as its _bucket (each le),
// _count and _sum lines (the sum without its value, which adds up floats);
// and the type of each family.
func samples(families map[string]*dto.MetricFamily) (lines []string, types map[string]string) {
	types = map[string]string{}
	for name, f := range families {
		if exporterOwn(name) {
			continue
		}
		types[name] = f.GetType().String()
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if !exporterOwn(l.GetName()) {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
			}
			sort.Strings(labels)
			series := func(suffix string, extra ...string) string {
				return name + suffix + "{" + strings.Join(append(slices.Clone(labels), extra...), ",") + "}"
			}
			switch {
			case m.Counter != nil:
				lines = append(lines, fmt.Sprintf("%s %g", series(""), m.GetCounter().GetValue()))
			case m.Gauge != nil:
				lines = append(lines, fmt.Sprintf("%s %g", series(""), m.GetGauge().GetValue()))
			case m.Histogram != nil:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					lines = append(lines, fmt.Sprintf("%s %d", series("_bucket", fmt.Sprintf("le=%q", fmt.Sprint(b.GetUpperBound()))), b.GetCumulativeCount()))
				}
				lines = append(lines, fmt.Sprintf("%s %d", series("_count"), h.GetSampleCount()), series("_sum"))
			default:
				lines = append(lines, series("")+" of type "+f.GetType().String())
			}
		}
	}
	sort.Strings(lines)
	return lines, types
}

// decideForMetrics makes, through m, the decisions of package metricstest
// (every outcome, a memory store, a limiter whose store is down) and those
// of a Redis store, with every value watched, so that every metric family
// of both modules has series.
func decideForMetrics(t *testing.T, m *bothMetrics) {
	t.Helper()
	lims := metricstest.New(t, m.Observe)
	rs := metricstest.NewRedis(t, m.Observe)
	for _, v := range []any{lims.Limiter, lims.Down, lims.Store, rs.Store} {
		m.Watch(t, v)
	}
	lims.Decide(t)
	rs.Decide(t)
}

// The two metrics modules give the same metrics: after the same decisions,
// a scrape of the prometheus module's Collector and one of the otel
// module's Recorder through the OpenTelemetry Prometheus exporter have the
// same families, of the same types, with the same series (label names and
// values) and the same counts, the exporter's target_info and otel_scope_
// labels aside.
func TestMetricsParity(t *testing.T) {
	t.Parallel()
	m := newBothMetrics(t)
	decideForMetrics(t, m)

	promLines, promTypes := samples(scrapeText(t, m.Prom))
	otelLines, otelTypes := samples(scrapeText(t, m.OTel))
	assert.Equal(t, promTypes, otelTypes, "the families and their types")
	assert.Equal(t, promLines, otelLines, "the series and their values")
	// Every family the modules document, each with series.
	for _, name := range []string{
		"ratescope_decisions_total", "ratescope_decision_cost_total", "ratescope_decision_duration_seconds",
		"ratescope_store_failures_total", "ratescope_store_evictions_total",
		"ratescope_redis_calls_total", "ratescope_redis_round_trips_total", "ratescope_redis_failures_total",
		"ratescope_redis_failed_fast_total", "ratescope_redis_breaker_opens_total", "ratescope_redis_breaker_open",
		"ratescope_redis_cache_hits_total", "ratescope_redis_cached_denials",
	} {
		assert.Contains(t, promTypes, name)
	}
	assert.Len(t, promTypes, 13, "no family left unchecked: %v", promTypes)
	// The outcome values are core.Outcome's names.
	outcomes := outcomeNames()
	for _, l := range promLines {
		if v := regexp.MustCompile(`outcome="([^"]*)"`).FindStringSubmatch(l); v != nil {
			assert.Contains(t, outcomes, v[1], l)
		}
	}
}

// outcomeNames are the names of core.Outcomes.
func outcomeNames() []string {
	var names []string
	for _, o := range core.Outcomes() {
		names = append(names, o.String())
	}
	return names
}

// dashboard is the part of a Grafana dashboard's JSON the tests read.
type dashboard struct {
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Type    string `json:"type"`
		GridPos struct {
			H, W, X, Y int
		} `json:"gridPos"`
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
		} `json:"fieldConfig"`
		Targets []struct {
			RefID        string `json:"refId"`
			Expr         string `json:"expr"`
			LegendFormat string `json:"legendFormat"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	require.NotEmpty(t, d.Panels)
	return d
}

// promQLNames are the metric names, label names and matchers of a PromQL
// expression of the dashboard.
type promQLNames struct {
	Metrics []string
	// Labels are the label names of its matchers and of its by and
	// without clauses.
	Labels []string
	// Values are the values each label is matched against: a regular
	// expression's alternatives one by one.
	Values map[string][]string
}

// promQLToken is a token of PromQL: a string, a duration in brackets, a
// number, a name, a matching operator, or a character.
var promQLToken = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\[[^\]]*\]|[0-9]+(?:\.[0-9]+)?|[a-zA-Z_:][a-zA-Z0-9_:]*|=~|!~|!=|==|>=|<=|\S`)

// promQLKeywords are the names of PromQL that are no metric.
var promQLKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true,
}

// parsePromQL reads the names of expr, written as the dashboard writes its
// queries: aggregations with by (...), functions, selectors with
// {label op "value"} matchers and [range]s. Grafana's variables ($job,
// $__rate_interval) are inside strings and ranges. It is no PromQL parser:
// the test that runs every query in Prometheus (TestDashboardScreenshot)
// checks that each returns data.
func parsePromQL(t *testing.T, expr string) promQLNames {
	t.Helper()
	toks := promQLToken.FindAllString(expr, -1)
	require.Equal(t, strings.Join(strings.Fields(expr), ""), strings.Join(toks, ""), "every character of %s read", expr)
	n := promQLNames{Values: map[string][]string{}}
	isName := func(s string) bool { return regexp.MustCompile(`^[a-zA-Z_:]`).MatchString(s) }
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case (tok == "by" || tok == "without") && next == "(":
			for i += 2; i < len(toks) && toks[i] != ")"; i++ {
				if toks[i] != "," {
					n.Labels = append(n.Labels, toks[i])
				}
			}
		case tok == "{":
			for i++; i < len(toks) && toks[i] != "}"; i++ {
				if toks[i] == "," {
					continue
				}
				require.Less(t, i+2, len(toks), expr)
				label, op, value := toks[i], toks[i+1], toks[i+2]
				require.Contains(t, []string{"=", "!=", "=~", "!~"}, op, "a matcher of %s", expr)
				n.Labels = append(n.Labels, label)
				v := strings.Trim(value, `"`)
				if op == "=~" || op == "!~" {
					n.Values[label] = append(n.Values[label], strings.Split(v, "|")...)
				} else {
					n.Values[label] = append(n.Values[label], v)
				}
				i += 2
			}
		case isName(tok) && next != "(" && next != "by" && next != "without" && !promQLKeywords[tok]:
			n.Metrics = append(n.Metrics, tok)
		}
	}
	return n
}

// scrapeLabels are the label names a scrape by Prometheus adds to every
// series: the dashboard may select and group by them.
var scrapeLabels = []string{"job", "instance"}

// seriesLabels returns, for each sample name of families (a histogram's
// _bucket, _count and _sum), the label names of its series, the
// exporter's own aside.
func seriesLabels(families map[string]*dto.MetricFamily) map[string][]string {
	out := map[string][]string{}
	add := func(name string, labels ...string) {
		for _, l := range labels {
			if !slices.Contains(out[name], l) {
				out[name] = append(out[name], l)
			}
		}
		if out[name] == nil {
			out[name] = []string{}
		}
	}
	for name, f := range families {
		if exporterOwn(name) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if !exporterOwn(l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
			if f.GetType() == dto.MetricType_HISTOGRAM {
				add(name+"_bucket", append(labels, "le")...)
				add(name+"_count", labels...)
				add(name+"_sum", labels...)
				continue
			}
			add(name, labels...)
		}
	}
	return out
}

// The dashboard of the docs asks only for what both modules give: every
// metric name of its queries (and of its job variable) is a series of the
// prometheus module and of the otel module through the exporter, every
// label it matches or groups by is a label of those metrics in both (or
// one Prometheus adds at the scrape), every outcome it matches is a
// core.Outcome, and every label of a legend is one its query keeps. It has
// the panels an operator needs at a glance.
func TestDashboardNames(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	m := newBothMetrics(t)
	decideForMetrics(t, m)
	modules := map[string]map[string][]string{
		"prometheus": seriesLabels(scrapeText(t, m.Prom)),
		"otel":       seriesLabels(scrapeText(t, m.OTel)),
	}
	check := func(where, expr string, legend string) {
		t.Helper()
		n := parsePromQL(t, expr)
		require.NotEmpty(t, n.Metrics, "%s: %s asks for no metric", where, expr)
		for module, labels := range modules {
			for _, metric := range n.Metrics {
				have, ok := labels[metric]
				if !assert.True(t, ok, "%s: %s: no %s in the %s module's scrape", where, expr, metric, module) {
					continue
				}
				for _, l := range n.Labels {
					assert.True(t, slices.Contains(have, l) || slices.Contains(scrapeLabels, l),
						"%s: %s: %s has no label %s in the %s module's scrape (it has %v)", where, expr, metric, l, module, have)
				}
			}
		}
		for _, v := range n.Values["outcome"] {
			assert.Contains(t, outcomeNames(), v, "%s: %s: an outcome", where, expr)
		}
		// A legend names only labels its query keeps: those of its by
		// clause, the only labels an aggregation keeps.
		for _, l := range regexp.MustCompile(`\{\{\s*([a-zA-Z_]+)\s*\}\}`).FindAllStringSubmatch(legend, -1) {
			assert.Contains(t, n.Labels, l[1], "%s: the legend %q of %s", where, legend, expr)
		}
	}
	var variables int
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			variables++
			expr := regexp.MustCompile(`^label_values\((.*),\s*([a-z_]+)\)$`).FindStringSubmatch(v.Definition)
			require.NotNil(t, expr, "the variable %s: %s", v.Name, v.Definition)
			check("variable "+v.Name, expr[1]+`{`+expr[2]+`!=""}`, "")
		}
	}
	assert.Equal(t, 1, variables, "the job variable")
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		assert.Equal(t, "timeseries", p.Type, p.Title)
		assert.NotEmpty(t, p.FieldConfig.Defaults.Unit, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			assert.Contains(t, target.Expr, `job=~"$job"`, "%s %s: the job variable applies", p.Title, target.RefID)
			check(p.Title+" "+target.RefID, target.Expr, target.LegendFormat)
		}
	}
	assert.Equal(t, []string{
		"Decisions per second by outcome",
		"Refusals per second by scope",
		"Store failures and failed-open decisions",
		"Decision duration p50 and p99",
		"Redis circuit breaker open",
		"Redis calls per second",
	}, titles)
}
