package liveview

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratescope/ratescope/core"
)

// tokenHeader is the request header that carries the page's CSRF token on
// a reset request. The page holds the token in
// <meta name="liveview-token">; a page of another origin cannot read it.
// The page's script (pageScript) names the header too.
const tokenHeader = "X-CSRF-Token"

// ServeHTTP serves the view at whatever path it is mounted on, to a
// request that the application has already authenticated:
//
//   - GET: the page, HTML with inline SVG charts and a small inline script
//     that fetches ?format=main every Config.Refresh and posts resets, and
//     nothing from any other origin (its Content-Security-Policy allows
//     no other);
//   - GET ?format=json: the page's figures as one JSON object, for
//     scripts: "now", "series" (the counts of each second of the last 15
//     minutes, per scope, kind of caller and outcome), "refused" (the
//     table's rows, each with the "ref" a reset names), "refusals",
//     "callers", "error_bound" and "reset_allowed"; docs/reference.md
//     describes every field;
//   - GET ?format=main: the page's changing part, HTML, for its script,
//     with the page's Content-Security-Policy and frame protection;
//   - POST with the form fields scope and ref (a row's "scope" and "ref"
//     in the JSON) and the page's CSRF token (its <meta
//     name="liveview-token">) in the header X-CSRF-Token: resets that
//     caller in that scope (core.Limiter.Reset) and answers 204 No
//     Content. For a caller whose user id is longer than the view keeps
//     (its row's caller ends with the id's length and digest), it answers
//     202 Accepted, and the reset is made at the caller's next refusal,
//     when the view holds the caller's value again. It answers 400 Bad
//     Request for a ref that is no row reference; 403 Forbidden when
//     reset is not allowed ([View.AllowReset]), the token is missing or
//     wrong, or the request comes from another site (Sec-Fetch-Site); 404
//     Not Found when the view does not list that caller in that scope
//     (the page's rows, Config.Listed at most, as of the request); 500 when
//     the reset failed. Every error has a JSON body {"error": "..."}.
//
// Other methods get 405 Method Not Allowed. Every answer has
// Cache-Control: no-store.
func (v *View) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		v.reset(w, r)
		return
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeError(w, http.StatusMethodNotAllowed, "want GET, HEAD or POST")
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "json":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(v.snapshot())
	case "main":
		setHTMLHeaders(w.Header())
		_ = pageTemplate.ExecuteTemplate(w, "main", v.pageData())
	case "", "html":
		setHTMLHeaders(w.Header())
		_ = pageTemplate.Execute(w, v.pageData())
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("format %q: want json, main or html", f))
	}
}

// setHTMLHeaders sets the headers of an HTML answer, the page or its
// changing part: both hold callers' ids, and either may be opened as a
// document of its own, so both have the page's Content-Security-Policy
// and may not be framed.
func setHTMLHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// reset serves a POST: see ServeHTTP.
func (v *View) reset(w http.ResponseWriter, r *http.Request) {
	lim := v.limiter.Load()
	if lim == nil {
		writeError(w, http.StatusForbidden, "reset is not allowed: the application did not call AllowReset")
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		writeError(w, http.StatusForbidden, "reset from another site ("+site+")")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(tokenHeader)), []byte(v.token)) != 1 {
		writeError(w, http.StatusForbidden, "missing or wrong "+tokenHeader)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "form: "+err.Error())
		return
	}
	scope, ref := r.PostForm.Get("scope"), r.PostForm.Get("ref")
	id, err := parseRef(ref)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	entries, _ := v.listed(v.cfg.Now())
	i := slices.IndexFunc(entries, func(e entry) bool { return e.scope == scope && e.who() == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no caller %q is listed in scope %q", ref, scope))
		return
	}
	e := entries[i]
	if e.long != nil {
		// The view holds no value of this caller (its id is too long to
		// keep): the reset waits for its next refusal (View.Observe).
		v.top.pend(scope, id, v.cfg.Now().UnixNano())
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// e.caller is the value the limiter gave in its event: Reset counts it
	// as the limiter counted it.
	if err := (*lim).Reset(r.Context(), scope, e.caller); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, core.ErrUnknownScope) {
			status = http.StatusNotFound
		}
		writeError(w, status, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeError answers status with {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}

// pageData is what the page's template shows.
type pageData struct {
	Token   string
	Refresh int64 // milliseconds
	Snap    snapshot
	Charts  []chart
	Rows    []row
}

// A chart draws the series of one scope and kind of caller.
type chart struct {
	Scope, Kind string
	Peak        int64 // the largest count of a second, the top of every strip
	Lines       []line
}

// A line is one outcome of a chart.
type line struct {
	Outcome, Label, Colour string
	Total, Peak            int64  // the sum of the counts and the largest
	Points                 string // of an SVG polyline, 0 to seconds-1 by 0 to chartHeight

	counts []int64 // per second, drawn as Points once the chart's peak is known
}

// A row is one caller of the table of refused callers.
type row struct {
	refused
	Enabled bool
}

// chartHeight is the height of a chart's strip in SVG units; a second is
// one unit wide. A chart draws each outcome that had a decision on a strip
// of its own, so that no line hides another, and every strip of a chart on
// one logarithmic scale whose top is the chart's peak, so that a steady
// few refusals a second stay visible beside a burst of a hundred.
const chartHeight = 40

// outcomeLines are the label and colour of each outcome's line, by its
// name in a [series].
var outcomeLines = map[string]struct{ label, colour string }{
	core.OutcomeAllowed.String():      {"allowed", "#2e7d32"},
	core.OutcomeDenied.String():       {"refused", "#c62828"},
	core.OutcomeExempt.String():       {"exempt", "#1565c0"},
	core.OutcomeShadow.String():       {"shadow (would refuse)", "#8e24aa"},
	core.OutcomeFailedOpen.String():   {"failed open", "#ef6c00"},
	core.OutcomeLocal.String():        {"decided in memory", "#f9a825"},
	core.OutcomeFailedClosed.String(): {"failed closed", "#37474f"},
}

// pageData returns the page's figures now.
func (v *View) pageData() pageData {
	snap := v.snapshot()
	d := pageData{Token: v.token, Refresh: v.cfg.Refresh.Milliseconds(), Snap: snap}
	for _, s := range snap.Series {
		if n := len(d.Charts); n == 0 || d.Charts[n-1].Scope != s.Scope || d.Charts[n-1].Kind != s.Kind {
			d.Charts = append(d.Charts, chart{Scope: s.Scope, Kind: s.Kind, Peak: 1})
		}
		c := &d.Charts[len(d.Charts)-1]
		peak := slices.Max(s.PerSecond)
		c.Peak = max(c.Peak, peak)
		l := outcomeLines[s.Outcome]
		c.Lines = append(c.Lines, line{Outcome: s.Outcome, Label: l.label, Colour: l.colour, Total: s.Total, Peak: peak, counts: s.PerSecond})
	}
	for _, c := range d.Charts {
		for i := range c.Lines {
			c.Lines[i].Points = polyline(c.Lines[i].counts, c.Peak)
		}
	}
	for _, r := range snap.Refused {
		d.Rows = append(d.Rows, row{refused: r, Enabled: snap.ResetAllowed})
	}
	return d
}

// polyline returns the points of an SVG polyline of counts on a
// logarithmic scale whose top is peak (0 at the bottom, peak 2 units below
// the top): only the seconds where the count changes, and the ends.
func polyline(counts []int64, peak int64) string {
	var b strings.Builder
	top := math.Log1p(float64(peak))
	y := func(n int64) string {
		return strconv.FormatFloat(chartHeight-(chartHeight-2)*math.Log1p(float64(n))/top, 'f', 1, 64)
	}
	last := -1 // the last second with a point
	point := func(i int) {
		if i == last {
			return
		}
		last = i
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
		b.WriteString(y(counts[i]))
	}
	for i := range counts {
		if i > 0 && counts[i] != counts[i-1] {
			point(i - 1)
			point(i)
		}
		if i == 0 || i == len(counts)-1 {
			point(i)
		}
	}
	return b.String()
}

// pageScript is the page's script: it fetches the changing part of the
// page every Refresh, from the page's own URL, and posts resets there. It
// builds that URL from location.origin and location.pathname, which carry
// no credentials: fetch refuses a URL with credentials, and a URL relative
// to a page opened as http://user:password@host/... would carry them; the
// browser gives the credentials it cached for the page instead. It
// holds no comment: html/template drops comments from scripts, and the
// script served must be this text, whose hash the Content-Security-Policy
// allows (TestPageIsSelfContained).
const pageScript = `
(function () {
  'use strict';
  var live = document.getElementById('live');
  var status = document.getElementById('status');
  var token = document.querySelector('meta[name="liveview-token"]').content;
  var here = location.origin + location.pathname;
  var note = '';
  function load() {
    return fetch(here + '?format=main', {cache: 'no-store', credentials: 'same-origin'}).then(function (r) {
      if (!r.ok) { throw new Error('HTTP ' + r.status); }
      return r.text();
    }).then(function (html) {
      live.innerHTML = html;
      status.textContent = note + 'updated ' + document.getElementById('now').dataset.clock;
    }, function (err) {
      status.textContent = 'not updated since ' + document.getElementById('now').dataset.clock + ': ' + err.message;
    });
  }
  live.addEventListener('click', function (ev) {
    var b = ev.target.closest('button[data-ref]');
    if (!b || b.disabled) { return; }
    b.disabled = true;
    var form = new URLSearchParams();
    form.set('scope', b.dataset.scope);
    form.set('ref', b.dataset.ref);
    fetch(here, {method: 'POST', body: form, credentials: 'same-origin', headers: {'X-CSRF-Token': token}}).then(function (r) {
      var what = r.status === 202 ? 'reset at its next refusal: ' : 'reset ';
      note = (r.ok ? what + b.dataset.caller + ' in ' + b.dataset.scope : 'reset failed: HTTP ' + r.status) + '; ';
      return load();
    }, function (err) {
      note = 'reset failed: ' + err.message + '; ';
      status.textContent = note;
    });
  });
  setInterval(load, Number(live.dataset.refresh));
})();
`

// pageStyle is the page's style sheet.
const pageStyle = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
h2 { font-size: 1.05em; margin: 1.2em 0 .3em; }
.chart svg { display: block; width: 100%; max-width: 900px; height: 40px; background: #fafafa; border: 1px solid #ddd; }
.strip { margin: 2px 0; }
.strip .label { font-size: 12px; color: #555; }
.axis { display: flex; justify-content: space-between; max-width: 900px; font-size: 12px; color: #777; }
.legend { list-style: none; padding: 0; margin: .2em 0; display: flex; flex-wrap: wrap; gap: 1em; }
.legend .swatch { display: inline-block; width: .8em; height: .8em; margin-right: .3em; vertical-align: middle; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: .25em .7em; border-bottom: 1px solid #eee; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #777; }
`

// hash returns the CSP source of s: 'sha256-' and its base64 SHA-256.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// contentSecurityPolicy allows the page only its own inline script and
// style, by hash, and requests to its own origin.
var contentSecurityPolicy = "default-src 'none'; script-src " + hash(pageScript) +
	"; style-src " + hash(pageStyle) + "; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageTemplate is the page; its "main" template is the part that changes.
var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"clock": func(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="liveview-token" content="{{.Token}}">
<link rel="icon" href="data:,">
<title>ratescope: live limits</title>
<style>` + pageStyle + `</style>
</head>
<body>
<h1>What the limiter decides, live</h1>
<p class="muted">Decisions per second over the last 15 minutes, and the callers refused most.</p>
<p class="muted" id="status" role="status"></p>
<main id="live" data-refresh="{{.Refresh}}">{{template "main" .}}</main>
<script>` + pageScript + `</script>
</body>
</html>
{{define "main"}}
<p class="muted" id="now" data-clock="{{clock .Snap.Now}}">As of {{clock .Snap.Now}}.</p>
{{range .Charts}}
<section class="chart" data-scope="{{.Scope}}" data-kind="{{.Kind}}">
<h2>Scope {{.Scope}}, {{.Kind}} callers <span class="muted">(peak {{.Peak}}/s; one strip per outcome, all on one log scale: half way up is about the square root of the peak)</span></h2>
{{$chart := .}}{{range .Lines}}{{if .Total}}<div class="strip" data-outcome="{{.Outcome}}"><span class="label">{{.Label}}, peak {{.Peak}}/s</span>
<svg viewBox="0 0 ` + strconv.Itoa(seconds) + ` ` + strconv.Itoa(chartHeight) + `" preserveAspectRatio="none" role="img" aria-label="{{.Label}} per second in scope {{$chart.Scope}}, {{$chart.Kind}} callers, peak {{.Peak}}"><polyline fill="none" stroke="{{.Colour}}" stroke-width="1.5" vector-effect="non-scaling-stroke" data-outcome="{{.Outcome}}" points="{{.Points}}"/></svg></div>
{{end}}{{end}}
<div class="axis"><span>15 min ago</span><span>10 min ago</span><span>5 min ago</span><span>now</span></div>
<ul class="legend">
{{range .Lines}}<li data-outcome="{{.Outcome}}" data-total="{{.Total}}"><svg class="swatch" viewBox="0 0 1 1"><rect width="1" height="1" fill="{{.Colour}}"/></svg>{{.Label}}: {{.Total}}</li>
{{end}}</ul>
</section>
{{else}}
<p>No decision seen yet.</p>
{{end}}
<h2>Callers refused most</h2>
<p class="muted" id="accuracy">{{.Snap.Refusals}} refusals in the last 15 to 30 minutes; {{.Snap.Callers}} callers kept. {{if .Snap.ErrorBound}}A count marked ±E may include up to E refusals of other callers, and no count more than {{.Snap.ErrorBound}}.{{else}}Every count is exact.{{end}}{{if not .Snap.ResetAllowed}} Reset is not enabled.{{end}}</p>
<table id="refused">
<thead><tr><th>Scope</th><th>Caller</th><th>Kind</th><th>Refusals</th><th>First refusal</th><th>Last refusal</th><th>Refused by</th><th>Until</th><th></th></tr></thead>
<tbody>
{{range .Rows}}<tr data-scope="{{.Scope}}" data-ref="{{.Ref}}" data-refusals="{{.Refusals}}">
<td>{{.Scope}}</td><td>{{.Caller}}</td><td>{{.Kind}}</td><td class="n">{{.Refusals}}{{if .Error}} ±{{.Error}}{{end}}</td><td>{{clock .First}}</td><td>{{clock .Last}}</td><td>{{.Limit}}</td><td>{{if not .Until.IsZero}}{{clock .Until}}{{end}}</td>
<td><button type="button" data-scope="{{.Scope}}" data-ref="{{.Ref}}" data-caller="{{.Caller}}"{{if not .Enabled}} disabled title="reset is not enabled"{{end}}>Reset</button>{{if not .Reset.IsZero}} <span class="muted">reset {{clock .Reset}}</span>{{end}}{{if .ResetPending}} <span class="muted">reset at its next refusal</span>{{end}}</td></tr>
{{else}}<tr><td colspan="9" class="muted">No caller refused in the last 15 minutes.</td></tr>
{{end}}</tbody>
</table>
{{end}}`))
