package replay

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// A Report is what a replay found.
type Report struct {
	// Lines is the number of lines read; Skipped those that could not be
	// read, the first few quoted in SkippedExamples; Unrouted those whose
	// path no route limits.
	Lines, Skipped, Unrouted int64
	SkippedExamples          []string
	// From and To are the times of the earliest and the latest line.
	From, To time.Time
	// Start is the minute of the first point of the series; each point is
	// MinutesPerPoint minutes.
	Start           time.Time
	MinutesPerPoint int64
	// Tables are the -rates table and the what-if tables, as given.
	Tables []string
	// Groups are the scopes and kinds with requests, sorted.
	Groups []GroupReport

	format  string // Options.Format
	routes  Routes // the routes in force
	readsAs string // a format the first unreadable line reads in, "" if none
}

// Err reports a replay that tells nothing, and the flag to change: no
// line given, no line readable in -format (and the format a line reads
// in, if one of combined, main and json does), or no request whose path
// a route limits. It is nil for any other replay.
func (rep *Report) Err() error {
	read := rep.Lines - rep.Skipped
	format := cmp.Or(rep.format, "combined")
	switch {
	case rep.Lines == 0:
		return errors.New("no line to replay")
	case read == 0:
		hint := "give the log's format: -format combined, main, json, or its nginx log_format string"
		if rep.readsAs != "" {
			hint = "the first reads as -format " + rep.readsAs
		}
		return fmt.Errorf("%s, and none could be read as -format %s; %s", plural(rep.Lines, "line"), format, hint)
	case rep.Unrouted == read:
		return fmt.Errorf("%s read, and none was limited: no path starts with the prefix of a route (%s); give the application's routes with -route PREFIX=SCOPE", plural(read, "line"), rep.routes.String())
	}
	return nil
}

// readsAs returns the first of combined, main and json, other than
// format, in which line reads, or "".
func readsAs(line []byte, format string) string {
	if line == nil {
		return ""
	}
	for _, f := range []string{"combined", "main", "json"} {
		if f == cmp.Or(format, "combined") {
			continue
		}
		p, err := NewParser(f, DefaultJSONFields())
		if err != nil {
			continue
		}
		var l Line
		if p.Parse(line, &l) == nil {
			return f
		}
	}
	return ""
}

// GroupReport is the figures of one scope and kind.
type GroupReport struct {
	Scope, Kind string
	// Rates are the rates of the scope and kind under each table.
	Rates []string
	// MinuteLimit and DayLimit are the -rates limits over a minute and a
	// day, 0 when there is none.
	MinuteLimit, DayLimit int64
	Requests              int64
	// Refused and RefusedCallers are per table: 0 is -rates.
	Refused, RefusedCallers []int64
	Callers                 int64
	Top                     []TopCaller
	// PeakMinute and PeakDay count the callers by their busiest clock
	// minute and UTC day, sorted by peak.
	PeakMinute, PeakDay []Count
	// Series are the requests per minute of the top callers kept.
	Series []Series
}

// A Count is how many callers had a peak.
type Count struct {
	Peak, Callers int64
}

// A Series is a caller's requests per minute: each point the busiest
// minute of Report.MinutesPerPoint minutes from Report.Start.
type Series struct {
	Caller string
	Points []uint32
}

// chartCallers is how many callers a chart of requests per minute draws.
const chartCallers = 5

func (g *group) report(r *Replayer) GroupReport {
	gr := GroupReport{
		Scope: g.scope, Kind: kindName(g.kind), Requests: g.requests, Callers: g.callers,
		Refused: g.refused, RefusedCallers: g.refusedCallers, Top: g.top,
		MinuteLimit: g.minuteLim, PeakMinute: counts(g.peakMinute), PeakDay: counts(g.peakDay),
	}
	if gr.Top == nil {
		gr.Top = []TopCaller{}
	}
	for _, r := range g.info.rates[g.kind] {
		if r.Period == 24*time.Hour {
			gr.DayLimit = r.Limit
		}
	}
	for _, d := range append([]*decider{r.base}, r.whatIf...) {
		gr.Rates = append(gr.Rates, d.scopes[g.scope].text[g.kind])
	}
	// The chart's callers: the first of the top list that have a series,
	// then the others with a series, best first.
	byName := map[string]*series{}
	for _, sr := range g.series {
		byName[sr.caller] = sr
	}
	var all []TopCaller
	for _, sr := range g.series {
		all = append(all, sr.final)
	}
	slices.SortFunc(all, func(a, b TopCaller) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	for _, e := range all {
		if len(gr.Series) == chartCallers {
			break
		}
		sr := byName[e.Caller]
		if e.Refused == 0 && len(gr.Series) > 0 && e.Requests*4 < gr.Top[0].Requests {
			continue
		}
		gr.Series = append(gr.Series, Series{Caller: sr.caller, Points: sr.points})
	}
	return gr
}

func counts(m map[int64]int64) []Count {
	out := make([]Count, 0, len(m))
	for p, n := range m {
		out = append(out, Count{Peak: p, Callers: n})
	}
	slices.SortFunc(out, func(a, b Count) int { return int(a.Peak - b.Peak) })
	return out
}

// Above returns how many callers had a peak above x: those a limit of x
// over the peak's period would have refused at least once.
func Above(cs []Count, x int64) int64 {
	var n int64
	for _, c := range cs {
		if c.Peak > x {
			n += c.Callers
		}
	}
	return n
}

// jsonReport is the shape of -json: a contract.
type jsonReport struct {
	Lines   int64        `json:"lines"`
	Skipped int64        `json:"skipped"`
	From    string       `json:"from"`
	To      string       `json:"to"`
	Scopes  []jsonScope  `json:"scopes"`
	WhatIf  []jsonWhatIf `json:"what_if,omitempty"`
	// Note is WindowsNote, with the what-if tables.
	Note string `json:"note,omitempty"`
}

type jsonScope struct {
	Scope          string      `json:"scope"`
	Kind           string      `json:"kind"`
	Requests       int64       `json:"requests"`
	Refused        int64       `json:"refused"`
	Callers        int64       `json:"callers"`
	RefusedCallers int64       `json:"refused_callers"`
	Top            []TopCaller `json:"top"`
}

type jsonWhatIf struct {
	Rates  string            `json:"rates"`
	Scopes []jsonWhatIfScope `json:"scopes"`
}

type jsonWhatIfScope struct {
	Scope          string `json:"scope"`
	Kind           string `json:"kind"`
	Limits         string `json:"limits"`
	Requests       int64  `json:"requests"`
	Refused        int64  `json:"refused"`
	RefusedCallers int64  `json:"refused_callers"`
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// WriteJSON writes the report as -json does:
//
//	{"lines":N,"skipped":N,"from":"RFC3339","to":"RFC3339","scopes":[{"scope":"api","kind":"anon",
//	"requests":N,"refused":N,"callers":N,"refused_callers":N,
//	"top":[{"caller":"203.0.113.7","requests":N,"refused":N,"peak_minute":N}]}]}
//
// and, only when there are what-if tables, "what_if": one entry a table
// with the figures of each scope and kind under it, and "note":
// [WindowsNote], which says why the refused figures are not those of
// clock minutes.
func (rep *Report) WriteJSON(w io.Writer) error {
	j := jsonReport{Lines: rep.Lines, Skipped: rep.Skipped, From: timeText(rep.From), To: timeText(rep.To), Scopes: []jsonScope{}}
	for _, g := range rep.Groups {
		j.Scopes = append(j.Scopes, jsonScope{
			Scope: g.Scope, Kind: g.Kind, Requests: g.Requests, Refused: g.Refused[0],
			Callers: g.Callers, RefusedCallers: g.RefusedCallers[0], Top: g.Top,
		})
	}
	for i := 1; i < len(rep.Tables); i++ {
		wi := jsonWhatIf{Rates: rep.Tables[i], Scopes: []jsonWhatIfScope{}}
		for _, g := range rep.Groups {
			wi.Scopes = append(wi.Scopes, jsonWhatIfScope{
				Scope: g.Scope, Kind: g.Kind, Limits: g.Rates[i], Requests: g.Requests,
				Refused: g.Refused[i], RefusedCallers: g.RefusedCallers[i],
			})
		}
		j.WhatIf = append(j.WhatIf, wi)
	}
	if len(j.WhatIf) > 0 {
		j.Note = WindowsNote
	}
	enc := json.NewEncoder(w)
	return enc.Encode(j)
}

// WriteText writes the report for a person: the callers refused most
// over every scope and kind, with what each looks like; then per scope and kind, the
// requests, the refused, the callers and those refused at least once, and
// the callers refused most (saying how many were left out); then the
// what-if comparison, with [WindowsNote] beside it.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s from %s to %s", plural(rep.Lines, "line"), timeText(rep.From), timeText(rep.To))
	fmt.Fprintf(&b, "; %d not limited (no route), %d unreadable\n", rep.Unrouted, rep.Skipped)
	for _, ex := range rep.SkippedExamples {
		fmt.Fprintf(&b, "  unreadable %s\n", ex)
	}
	if sum := rep.refusedMost(); sum.refused > 0 {
		fmt.Fprintf(&b, "\n%d of %s limited (%s) refused, from %d of %s; refused most (what each looks like is a guess from its figures):\n",
			sum.refused, plural(sum.requests, "request"), pct(sum.refused, sum.requests), sum.refusedCallers, plural(sum.callers, "caller"))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, f := range sum.top {
			fmt.Fprintf(tw, "  %s\t%s %s\t%d of %d refused\t%s\n", f.e.Caller, f.g.Scope, f.g.Kind, f.e.Refused, f.e.Requests, looksLike(f.g, f.e))
		}
		tw.Flush()
	}
	for _, g := range rep.Groups {
		fmt.Fprintf(&b, "\n%s %s (%s): %s, %d refused (%s), %s, %d refused at least once\n",
			g.Scope, g.Kind, g.Rates[0], plural(g.Requests, "request"), g.Refused[0], pct(g.Refused[0], g.Requests), plural(g.Callers, "caller"), g.RefusedCallers[0])
		if len(g.Top) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  the callers refused most (%s):\n", topOf(len(g.Top), g.Callers))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\tcaller\trequests\trefused\tpeak minute\tpeak day\t\n")
		for _, e := range g.Top {
			fmt.Fprintf(tw, "\t%s\t%d\t%d\t%d\t%d\t\n", e.Caller, e.Requests, e.Refused, e.PeakMinute, e.PeakDay)
		}
		tw.Flush()
	}
	if len(rep.Tables) > 1 {
		fmt.Fprintf(&b, "\nwhat if (the scopes and kinds whose rates the tables change):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  scope\tkind\trates\trequests\trefused\tcallers refused\n")
		for _, g := range rep.Groups {
			if !g.Compared() {
				continue
			}
			for i := range rep.Tables {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d (%s)\t%d\n", g.Scope, g.Kind, g.Rates[i], g.Requests, g.Refused[i], pct(g.Refused[i], g.Requests), g.RefusedCallers[i])
			}
		}
		tw.Flush()
		b.WriteString(wrap(WindowsNote, "  ", 76))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WindowsNote says, once, beside the refused figures of the what-if
// comparison, why they are higher than counting requests per clock minute
// would make them. The how-to it names works the example.
const WindowsNote = "Refused is the limiter's own answer, and more than counting clock minutes gives: " +
	"its window slides (at most the limit in any 60 seconds, whenever they start), " +
	"and a request leaves it with its bucket, up to a twentieth of the period late (3 s for a minute). " +
	"150 a minute for 10 minutes against 120/min: 340 refused, not 300. " +
	"The how-to \"Choose limits from your access logs\" tells why."

// maxFindings is the most callers the findings of a report list.
const maxFindings = 8

// finding is a caller of a top list, and its scope and kind.
type finding struct {
	g GroupReport
	e TopCaller
}

// summary is what -rates does over every scope and kind: the figures
// summed, and the callers refused most (at most maxFindings).
type summary struct {
	requests, refused, callers, refusedCallers int64
	top                                        []finding
}

func (rep *Report) refusedMost() summary {
	var sum summary
	for _, g := range rep.Groups {
		sum.requests, sum.refused = sum.requests+g.Requests, sum.refused+g.Refused[0]
		sum.callers, sum.refusedCallers = sum.callers+g.Callers, sum.refusedCallers+g.RefusedCallers[0]
		for _, e := range g.Top {
			if e.Refused > 0 {
				sum.top = append(sum.top, finding{g, e})
			}
		}
	}
	slices.SortStableFunc(sum.top, func(a, b finding) int { return cmp.Compare(b.e.Refused, a.e.Refused) })
	sum.top = sum.top[:min(len(sum.top), maxFindings)]
	return sum
}

// active returns the span of a caller's requests: "10:00-11:29", or the
// days when they are more than one.
func active(e TopCaller) string {
	if e.Last.Sub(e.First) >= 20*time.Hour {
		if e.First.YearDay() == e.Last.YearDay() && e.First.Year() == e.Last.Year() {
			return "all day"
		}
		return e.First.Format("Jan 2 15:04") + "-" + e.Last.Format("Jan 2 15:04")
	}
	return e.First.Format("15:04") + "-" + e.Last.Format("15:04")
}

// looksLike says in a few words what kind of caller e is, from its
// figures: an office or NAT (signed-in users from its address), a caller
// above the minute limit for long (a scraper or a heavy user) or briefly
// (a burst), or one refused only by the day limit (a poller, a crawler,
// a long job). It guesses;
// the figures beside it are facts.
func looksLike(g GroupReport, e TopCaller) string {
	var what []string
	if e.Users > 1 {
		n := strconv.FormatInt(e.Users, 10)
		if e.Users >= maxUsers {
			n += " or more"
		}
		what = append(what, n+" signed-in users came from this address: an office or a NAT, whose anonymous visitors share one count")
	}
	switch {
	case e.MinutesOver >= 10 && g.Kind == "user":
		what = append(what, fmt.Sprintf("above %d/min in %s: a heavy user, or a script signed in as one", g.MinuteLimit, plural(e.MinutesOver, "minute")))
	case e.MinutesOver >= 10:
		what = append(what, fmt.Sprintf("above %d/min in %s: steady, like a scraper or a batch job", g.MinuteLimit, plural(e.MinutesOver, "minute")))
	case e.MinutesOver > 0 && g.Kind == "user":
		what = append(what, fmt.Sprintf("above %d/min in %s: a heavy user's burst", g.MinuteLimit, plural(e.MinutesOver, "minute")))
	case e.MinutesOver > 0:
		what = append(what, fmt.Sprintf("above %d/min in %s: a burst", g.MinuteLimit, plural(e.MinutesOver, "minute")))
	case g.DayLimit > 0 && e.PeakDay > g.DayLimit && e.Users > 1:
		what = append(what, "refused by the day limit")
	case g.DayLimit > 0 && e.PeakDay > g.DayLimit && e.Last.Sub(e.First) < 20*time.Hour:
		what = append(what, fmt.Sprintf("up to %d a minute for %s, refused by the day limit: a long job", e.PeakMinute, e.Last.Sub(e.First).Round(time.Minute)))
	case g.DayLimit > 0 && e.PeakDay > g.DayLimit && e.PeakMinute*10 <= max(g.MinuteLimit, 20):
		what = append(what, fmt.Sprintf("at most %d a minute, all day, refused by the day limit: like a poller", e.PeakMinute))
	case g.DayLimit > 0 && e.PeakDay > g.DayLimit:
		what = append(what, fmt.Sprintf("up to %d a minute all day, refused by the day limit: like a crawler or an integration", e.PeakMinute))
	}
	if len(what) == 0 {
		return "refused where its busiest 60 seconds straddle two clock minutes"
	}
	return strings.Join(what, "; ")
}

// plural returns n and the noun, in the plural unless n is 1: "1 caller",
// "2 callers".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// topOf says how many callers of a list of shown are shown out of all:
// "top 20 of 1234 callers" when some were left out, "all 3 callers" (or
// "the 1 caller") when none was.
func topOf(shown int, all int64) string {
	switch {
	case int64(shown) < all:
		return fmt.Sprintf("top %d of %s", shown, plural(all, "caller"))
	case all == 1:
		return "the 1 caller"
	}
	return "all " + plural(all, "caller")
}

// wrap returns text in lines of at most width characters (but for a
// longer word), each starting with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}

// Compared reports whether the what-if tables give the scope and kind
// other rates than -rates: the groups the comparison shows.
func (g GroupReport) Compared() bool {
	for _, r := range g.Rates[1:] {
		if r != g.Rates[0] {
			return true
		}
	}
	return false
}

func pct(n, of int64) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}
