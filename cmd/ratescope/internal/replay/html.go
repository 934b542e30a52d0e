package replay

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The HTML report is one page with no script and nothing fetched: every
// chart is an inline SVG drawn here. Its elements carry stable classes and
// data attributes, so that a test in a browser finds them:
//
//	<section id="findings">                           (what -rates refuses, and from whom, first)
//	  <p class="verdict">
//	  <tr class="finding" data-caller="203.0.113.7" data-scope="api" data-kind="anon"> (the callers refused most)
//	<section class="group" id="api-anon" data-scope="api" data-kind="anon">
//	  <h3 class="per-minute">Requests per minute: top 5 of 3976 callers</h3> (or "all 3 callers")
//	  <svg class="chart" data-chart="per-minute" data-scope="api" data-kind="anon" data-y-top="80" data-y-scale="log">
//	    <line class="limit" data-limit="60"/>           (when the kind has a minute limit)
//	    <path class="series" data-caller="203.0.113.7"/> (one per top caller drawn)
//	  <svg class="chart" data-chart="peak-minute" ...>  (callers whose busiest minute is above x)
//	    <path class="series" data-series="callers-above"/>
//	    <line class="limit" data-limit="60" data-refused-callers="N"/>
//	  <svg class="chart" data-chart="peak-day" ...>     (the same for the busiest day)
//	  <svg class="chart" data-chart="what-if" ...>      (when -what-if changes the scope's rates)
//	    <rect class="bar" data-table="0" data-rates="60/min,1000/day" data-refused="N" data-refused-callers="N"/>
//	    <text class="table-name" data-table="0">-rates</text> (then "what if 1", ...)
//	  <h3 class="top">Callers refused most: top 20 of 3976 callers</h3>
//	  <table class="top"> one <tr class="caller" data-caller="..."> per caller of the top list
//	<section id="what-if"> the tables, named, and the figures of every compared scope and kind:
//	  <tr data-scope="api" data-kind="anon" data-table="1"><td>api</td><td>anon</td><td>what if 1</td>...
//	  <p class="note windows">                          (WindowsNote, once)
//
// The same report gives the same page, byte for byte.

// palette colours the callers of a chart, and the tables of a what-if
// chart, in order. They are categories, not verdicts: no red or green,
// which read as bad and good, and none near limitColour (Okabe and Ito's
// palette for colour-blind readers, less its vermilion and green).
var palette = []string{"#0072b2", "#e69f00", "#cc79a7", "#56b4e9", "#a6761d", "#6a3d9a"}

// limitColour draws the dashed line of a limit.
const limitColour = "#222222"

const (
	chartW, chartH = 720, 260
	padL, padR     = 56, 16
	padT, padB     = 16, 36
)

// WriteHTML writes the report as a self-contained HTML page.
func (rep *Report) WriteHTML(w io.Writer) error {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ratescope replay</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:900px}
h1{font-size:22px}#findings h2{border-top:0;margin-top:16px}.verdict{font-size:16px}
table.findings td{white-space:nowrap;vertical-align:top}table.findings td:nth-child(2),table.findings th:nth-child(2){text-align:left}table.findings td:last-child,table.findings th:last-child{text-align:left;white-space:normal;min-width:280px}h2{font-size:18px;margin-top:32px;border-top:1px solid #ccc;padding-top:16px}h3{font-size:15px;margin-bottom:4px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}td:first-child,th:first-child{text-align:left}
svg.chart{display:block;background:#fafafa;border:1px solid #ddd;margin:4px 0 12px}
svg text{font:11px sans-serif;fill:#444}.limit{stroke-dasharray:6 3;stroke-width:1.5}.axis{stroke:#888}.grid{stroke:#e6e6e6}
.series{fill:none;stroke-width:1.5}.note{color:#555}.same{color:#999}
table.tables td,table.tables th,table.what-if td:nth-child(-n+4),table.what-if th:nth-child(-n+4){text-align:left}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:3px;vertical-align:middle;margin-right:4px}
</style>
</head>
<body>
<h1>ratescope replay</h1>
`)
	fmt.Fprintf(&b, "<p id=\"summary\">%s from %s to %s: %d not limited (no route), %d unreadable.</p>\n",
		plural(rep.Lines, "line"), esc(timeText(rep.From)), esc(timeText(rep.To)), rep.Unrouted, rep.Skipped)
	if len(rep.SkippedExamples) > 0 {
		b.WriteString("<ul class=\"unreadable\">\n")
		for _, ex := range rep.SkippedExamples {
			fmt.Fprintf(&b, "<li><code>%s</code></li>\n", esc(ex))
		}
		b.WriteString("</ul>\n")
	}
	if len(rep.Groups) == 0 {
		b.WriteString("<p>No request was limited: no line's path matched a route.</p>\n")
	} else {
		rep.findings(&b)
	}
	for _, g := range rep.Groups {
		rep.group(&b, g)
	}
	if len(rep.Tables) > 1 {
		rep.whatIfTable(&b)
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// findings writes what matters first: how much -rates would refuse, and
// from whom, the callers refused most of every scope and kind, each with
// what it looks like.
func (rep *Report) findings(b *strings.Builder) {
	sum := rep.refusedMost()
	b.WriteString("<section id=\"findings\">\n<h2>What the limits of -rates would do</h2>\n")
	if sum.refused == 0 {
		fmt.Fprintf(b, "<p class=\"verdict\">None of the %s limited, from %s, would be refused.</p>\n</section>\n", plural(sum.requests, "request"), plural(sum.callers, "caller"))
		return
	}
	fmt.Fprintf(b, "<p class=\"verdict\">%d of %s limited (%s) would be refused, from %d of %s. The callers refused most:</p>\n",
		sum.refused, plural(sum.requests, "request"), pct(sum.refused, sum.requests), sum.refusedCallers, plural(sum.callers, "caller"))
	b.WriteString("<table class=\"findings\">\n<tr><th>caller</th><th>scope, kind</th><th>requests</th><th>refused</th><th>busiest minute</th><th>busiest day</th><th>active (UTC)</th><th>what it looks like</th></tr>\n")
	for _, f := range sum.top {
		fmt.Fprintf(b, "<tr class=\"finding\" data-caller=\"%s\" data-scope=\"%s\" data-kind=\"%s\"><td>%s</td><td><a href=\"#%s-%s\">%s, %s</a></td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			esc(f.e.Caller), esc(f.g.Scope), esc(f.g.Kind), esc(f.e.Caller), esc(f.g.Scope), esc(f.g.Kind), esc(f.g.Scope), esc(f.g.Kind),
			f.e.Requests, f.e.Refused, ofLimit(f.e.PeakMinute, f.g.MinuteLimit), ofLimit(f.e.PeakDay, f.g.DayLimit), esc(active(f.e)), esc(looksLike(f.g, f.e)))
	}
	b.WriteString("</table>\n")
	if n := sum.refusedCallers - int64(len(sum.top)); n > 0 {
		fmt.Fprintf(b, "<p class=\"note\">%s refused too, in the sections below.</p>\n", plural(n, "other caller"))
	}
	b.WriteString("</section>\n")
}

// ofLimit returns a peak, in bold when it is above the limit.
func ofLimit(peak, limit int64) string {
	if limit > 0 && peak > limit {
		return fmt.Sprintf("<b>%d</b> of %d", peak, limit)
	}
	return strconv.FormatInt(peak, 10)
}

// ratesCell returns the rates of table i for a scope and kind, the rates
// that are those of -rates (base) in grey, so that what a table changes
// stands out.
func ratesCell(base, rates string, i int) string {
	if i == 0 {
		return esc(rates)
	}
	same := strings.Split(base, ",")
	var parts []string
	for _, r := range strings.Split(rates, ",") {
		if slices.Contains(same, r) {
			parts = append(parts, "<span class=\"same\">"+esc(r)+"</span>")
		} else {
			parts = append(parts, "<b>"+esc(r)+"</b>")
		}
	}
	return strings.Join(parts, ",")
}

func (rep *Report) group(b *strings.Builder, g GroupReport) {
	attrs := fmt.Sprintf(`data-scope="%s" data-kind="%s"`, esc(g.Scope), esc(g.Kind))
	fmt.Fprintf(b, "<section class=\"group\" id=\"%s-%s\" %s>\n", esc(g.Scope), esc(g.Kind), attrs)
	fmt.Fprintf(b, "<h2>%s, %s callers: %s</h2>\n", esc(g.Scope), esc(g.Kind), esc(g.Rates[0]))
	fmt.Fprintf(b, "<p class=\"figures\">%s, %d refused (%s); %s, %d refused at least once.</p>\n",
		plural(g.Requests, "request"), g.Refused[0], pct(g.Refused[0], g.Requests), plural(g.Callers, "caller"), g.RefusedCallers[0])

	fmt.Fprintf(b, "<h3 class=\"per-minute\">Requests per minute: %s</h3>\n", esc(topOf(len(g.Series), g.Callers)))
	perMinute(b, attrs, g, rep)

	b.WriteString("<h3>Callers by their busiest minute</h3>\n")
	fmt.Fprintf(b, "<p class=\"note\">Read off how many callers a limit of x a minute would refuse at least once: those whose busiest clock minute had more than x requests.</p>\n")
	distribution(b, attrs, "peak-minute", g.PeakMinute, g.MinuteLimit, "requests in the busiest minute", "/min")

	b.WriteString("<h3>Callers by their busiest day</h3>\n")
	distribution(b, attrs, "peak-day", g.PeakDay, g.DayLimit, "requests in the busiest day (UTC)", "/day")

	if g.Compared() {
		b.WriteString("<h3>What if: refused under each rate table</h3>\n")
		whatIfChart(b, attrs, g)
		b.WriteString("<p class=\"note\">The tables, and why a window refuses more than clock minutes would: under What if, at the end of the page.</p>\n")
	}

	fmt.Fprintf(b, "<h3 class=\"top\">Callers refused most: %s</h3>\n", esc(topOf(len(g.Top), g.Callers)))
	b.WriteString("<table class=\"top\">\n<tr><th>caller</th><th>requests</th><th>refused</th><th>peak minute</th><th>peak day</th></tr>\n")
	for _, e := range g.Top {
		fmt.Fprintf(b, "<tr class=\"caller\" data-caller=\"%s\"><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n",
			esc(e.Caller), esc(e.Caller), e.Requests, e.Refused, e.PeakMinute, e.PeakDay)
	}
	b.WriteString("</table>\n</section>\n")
}

// svgOpen opens a chart whose y axis goes up to top, on a logarithmic
// scale if scale is "log", a linear one if "linear".
func svgOpen(b *strings.Builder, attrs, chart, label string, top float64, scale string) {
	fmt.Fprintf(b, "<svg class=\"chart\" data-chart=\"%s\" %s data-y-top=\"%s\" data-y-scale=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		chart, attrs, strconv.FormatFloat(top, 'f', -1, 64), scale, chartW, chartH, chartW, chartH, esc(label))
	fmt.Fprintf(b, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", padL, chartH-padB, chartW-padR, chartH-padB)
	fmt.Fprintf(b, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", padL, padT, padL, chartH-padB)
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// yTicks draws labels and grid lines at 0, half and the top of a linear
// y axis up to top.
func yTicks(b *strings.Builder, top float64) {
	for _, v := range []float64{0, top / 2, top} {
		tick(b, float64(chartH-padB)-v/top*float64(chartH-padT-padB), v)
	}
}

func tick(b *strings.Builder, y, v float64) {
	if v > 0 {
		fmt.Fprintf(b, "<line class=\"grid\" x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\"/>\n", padL+1, num(y), chartW-padR, num(y))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%s\" text-anchor=\"end\">%s</text>\n", padL-4, num(y+4), esc(short(v)))
}

// logY returns the y of v on a y axis up to top whose scale is log10 of
// 1+v: 0 on the x axis, and 1 still a tenth of the height under 1000, where
// a linear axis would draw it on the x axis too.
func logY(v, top float64) float64 {
	return float64(chartH-padB) - math.Log10(1+max(v, 0))/math.Log10(1+top)*float64(chartH-padT-padB)
}

// logTicks draws labels and grid lines at 0, the powers of ten below top
// not too close to it, and top.
func logTicks(b *strings.Builder, top float64) {
	tick(b, logY(0, top), 0)
	for v := 1.0; v < top; v *= 10 {
		if logY(v, top)-logY(top, top) >= 24 {
			tick(b, logY(v, top), v)
		}
	}
	tick(b, logY(top, top), top)
}

// nice returns the least of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a
// power of ten that is at least v: a round top for a linear axis, never
// more than a quarter above v.
func nice(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(max(v, 1))))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(math.Round(v/1e3), 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// perMinute draws the requests per minute of the top callers against the
// limit over a minute, over the whole log, on a logarithmic axis whose top
// is the busiest minute or the limit: a caller at 2 a minute stays visible
// beside one at 700.
func perMinute(b *strings.Builder, attrs string, g GroupReport, rep *Report) {
	points := 1
	if !rep.To.IsZero() && rep.MinutesPerPoint > 0 {
		points = int((rep.To.Unix()/60-rep.Start.Unix()/60)/rep.MinutesPerPoint) + 1
	}
	var top float64 = 1
	for _, s := range g.Series {
		points = max(points, len(s.Points))
		for _, v := range s.Points {
			top = max(top, float64(v))
		}
	}
	top = max(top, float64(g.MinuteLimit))
	svgOpen(b, attrs, "per-minute", "requests per minute of the top callers, "+g.Scope+" "+g.Kind, top, "log")
	logTicks(b, top)
	x := func(i int) float64 {
		if points == 1 {
			return padL
		}
		return padL + float64(i)/float64(points-1)*float64(chartW-padL-padR)
	}
	y := func(v float64) float64 { return logY(v, top) }
	start := rep.Start
	end := start.Add(time.Duration(int64(points)*rep.MinutesPerPoint) * time.Minute)
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">%s</text>\n", padL, chartH-padB+16, esc(start.Format("2006-01-02 15:04")))
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", chartW-padR, chartH-padB+16, esc(end.Format("2006-01-02 15:04")))
	per := "minute"
	if rep.MinutesPerPoint > 1 {
		per = fmt.Sprintf("busiest minute of each %d", rep.MinutesPerPoint)
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">requests per %s (UTC, log scale)</text>\n", (chartW+padL)/2, chartH-6, esc(per))
	if g.MinuteLimit > 0 {
		ly := num(y(float64(g.MinuteLimit)))
		fmt.Fprintf(b, "<line class=\"limit\" data-limit=\"%d\" stroke=\"%s\" x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\"/>\n", g.MinuteLimit, limitColour, padL, ly, chartW-padR, ly)
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%s\" text-anchor=\"end\">limit %d/min</text>\n", chartW-padR-2, num(y(float64(g.MinuteLimit))-4), g.MinuteLimit)
	}
	for i, s := range g.Series {
		var d strings.Builder
		for j, v := range s.Points {
			if j == 0 {
				d.WriteString("M")
			} else {
				d.WriteString(" L")
			}
			d.WriteString(num(x(j)) + " " + num(y(float64(v))))
		}
		if len(s.Points) == 1 {
			d.WriteString(" L" + num(x(0)+2) + " " + num(y(float64(s.Points[0]))))
		}
		if n := len(s.Points); n > 0 && n < points {
			// No request after its last point: 0 to the end of the log.
			d.WriteString(" L" + num(x(n)) + " " + num(y(0)) + " L" + num(x(points-1)) + " " + num(y(0)))
		}
		fmt.Fprintf(b, "<path class=\"series\" data-caller=\"%s\" stroke=\"%s\" d=\"%s\"/>\n", esc(s.Caller), palette[i%len(palette)], d.String())
	}
	b.WriteString("</svg>\n<p class=\"legend\">")
	if len(g.Series) == 0 {
		b.WriteString("No caller came near the limit.")
	}
	for i, s := range g.Series {
		fmt.Fprintf(b, "<span><i style=\"background:%s\"></i>%s</span>", palette[i%len(palette)], esc(s.Caller))
	}
	b.WriteString("</p>\n")
}

// distribution draws, for each x on a logarithmic axis, how many callers
// had a peak above x.
func distribution(b *strings.Builder, attrs, chart string, cs []Count, lim int64, xlabel, unit string) {
	var total int64
	var maxPeak int64 = 1
	for _, c := range cs {
		total += c.Callers
		maxPeak = max(maxPeak, c.Peak)
	}
	maxX := float64(max(maxPeak, lim)) * 1.5
	top := float64(max(total, 1))
	svgOpen(b, attrs, chart, "callers whose "+xlabel+" is above x", top, "log")
	logTicks(b, top)
	x := func(v float64) float64 {
		v = max(v, 1)
		return padL + math.Log10(v)/math.Log10(maxX)*float64(chartW-padL-padR)
	}
	y := func(v float64) float64 { return logY(v, top) }
	for v := 1.0; v <= maxX; v *= 10 {
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", num(x(v)), chartH-padB+14, short(v))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">x: %s; y: callers above x (both log scales)</text>\n", (chartW+padL)/2, chartH-6, esc(xlabel))
	// Above x, for x from 1: a step down at each peak.
	var d strings.Builder
	above := total
	d.WriteString("M" + num(x(1)) + " " + num(y(float64(above))))
	for _, c := range cs {
		if c.Peak < 1 {
			above -= c.Callers
			continue
		}
		d.WriteString(" L" + num(x(float64(c.Peak))) + " " + num(y(float64(above))))
		above -= c.Callers
		d.WriteString(" L" + num(x(float64(c.Peak))) + " " + num(y(float64(above))))
	}
	d.WriteString(" L" + num(x(maxX)) + " " + num(y(float64(above))))
	fmt.Fprintf(b, "<path class=\"series\" data-series=\"callers-above\" stroke=\"%s\" d=\"%s\"/>\n", palette[0], d.String())
	if lim > 0 {
		lx := num(x(float64(lim)))
		n := Above(cs, lim)
		fmt.Fprintf(b, "<line class=\"limit\" data-limit=\"%d\" data-refused-callers=\"%d\" stroke=\"%s\" x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%d\"/>\n", lim, n, limitColour, lx, padT, lx, chartH-padB)
		anchor, tx := "start", x(float64(lim))+4
		if tx > chartW*0.6 {
			anchor, tx = "end", tx-8
		}
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%d\" text-anchor=\"%s\">limit %d%s: %s above</text>\n", num(tx), padT+12, anchor, lim, unit, plural(n, "caller"))
	}
	b.WriteString("</svg>\n")
}

func whatIfChart(b *strings.Builder, attrs string, g GroupReport) {
	var top float64 = 1
	for _, r := range g.Refused {
		top = max(top, float64(r))
	}
	top = nice(top)
	svgOpen(b, attrs, "what-if", "refused requests under each rate table, "+g.Scope+" "+g.Kind, top, "linear")
	yTicks(b, top)
	n := len(g.Refused)
	slot := float64(chartW-padL-padR) / float64(n)
	for i, r := range g.Refused {
		h := float64(r) / top * float64(chartH-padT-padB)
		x := padL + float64(i)*slot + slot*0.2
		fmt.Fprintf(b, "<rect class=\"bar\" data-table=\"%d\" data-rates=\"%s\" data-refused=\"%d\" data-refused-callers=\"%d\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>\n",
			i, esc(g.Rates[i]), r, g.RefusedCallers[i], num(x), num(float64(chartH-padB)-h), num(slot*0.6), num(h), palette[i%len(palette)])
		fmt.Fprintf(b, "<text class=\"table-name\" data-table=\"%d\" x=\"%s\" y=\"%d\" text-anchor=\"middle\">%s: %s</text>\n", i, num(x+slot*0.3), chartH-padB+14, tableName(i), esc(g.Rates[i]))
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%d (%s)</text>\n", num(x+slot*0.3), num(float64(chartH-padB)-h-4), r, plural(g.RefusedCallers[i], "caller"))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">refused requests (callers refused) under each rate table, with its rates for %s %s</text>\n", (chartW+padL)/2, chartH-6, esc(g.Scope), esc(g.Kind))
	b.WriteString("</svg>\n")
}

// tableName names table i of a report: "-rates", then "what if 1", ...
func tableName(i int) string {
	if i == 0 {
		return "-rates"
	}
	return "what if " + strconv.Itoa(i)
}

func (rep *Report) whatIfTable(b *strings.Builder) {
	b.WriteString("<section id=\"what-if\">\n<h2>What if: the rate tables compared</h2>\n<table class=\"tables\">\n<tr><th>table</th><th>rates given</th></tr>\n")
	for i, t := range rep.Tables {
		if i == 0 && t == "" {
			t = "(none: each scope's starting values)"
		} else if i > 0 {
			t += ", over -rates"
		}
		fmt.Fprintf(b, "<tr data-table=\"%d\"><td>%s</td><td><code>%s</code></td></tr>\n", i, tableName(i), esc(t))
	}
	b.WriteString("</table>\n<table class=\"what-if\">\n<tr><th>scope</th><th>kind</th><th>table</th><th>its rates</th><th>requests</th><th>refused</th><th>callers refused</th></tr>\n")
	for _, g := range rep.Groups {
		if !g.Compared() {
			continue
		}
		for i := range rep.Tables {
			fmt.Fprintf(b, "<tr data-scope=\"%s\" data-kind=\"%s\" data-table=\"%d\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d (%s)</td><td>%d</td></tr>\n",
				esc(g.Scope), esc(g.Kind), i, esc(g.Scope), esc(g.Kind), tableName(i), ratesCell(g.Rates[0], g.Rates[i], i), g.Requests, g.Refused[i], pct(g.Refused[i], g.Requests), g.RefusedCallers[i])
		}
	}
	b.WriteString("</table>\n")
	fmt.Fprintf(b, "<p class=\"note windows\">%s</p>\n", esc(WindowsNote))
	b.WriteString("</section>\n")
}
