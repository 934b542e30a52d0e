// Command benchtable turns the output of the comparison benchmarks into the
// Markdown tables of README.md: for every benchmark, the median of each
// metric over the runs, with the largest deviation from the median as a
// share of it; for the HTTP benchmarks, each limiter's overhead over the
// baseline of the same run.
//
// Usage:
//
//	benchtable results/http.txt results/redis.txt results/memory.txt
//
// Use benchstat for a statistical comparison of two runs.
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ratescope/ratescope/benchmarks"
)

// procs matches the GOMAXPROCS suffix of a benchmark name.
var procs = regexp.MustCompile(`-\d+$`)

// results holds, by benchmark name (without the -N suffix) and unit, every
// value seen.
type results struct {
	names  []string
	values map[string]map[string][]float64
}

func (r *results) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procs.ReplaceAllString(f[0], "")
		if r.values[name] == nil {
			r.values[name] = make(map[string][]float64)
			r.names = append(r.names, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			r.values[name][f[i+1]] = append(r.values[name][f[i+1]], v)
		}
	}
	return sc.Err()
}

// stat is the median of a metric and the largest deviation from it, as a
// share of the median.
type stat struct {
	median, spread float64
	ok             bool
}

func (r *results) stat(name, unit string) stat {
	vs := slices.Clone(r.values[name][unit])
	if len(vs) == 0 {
		return stat{}
	}
	slices.Sort(vs)
	m := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	dev := max(m-vs[0], vs[len(vs)-1]-m)
	s := stat{median: m, ok: true}
	if m != 0 {
		s.spread = dev / math.Abs(m)
	}
	return s
}

// param returns the value of key in a benchmark name such as
// BenchmarkGin/limiter=ulule/callers=1.
func param(name, key string) string {
	for _, part := range strings.Split(name, "/") {
		if v, ok := strings.CutPrefix(part, key+"="); ok {
			return v
		}
	}
	return ""
}

func num(v float64) string {
	switch {
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func (s stat) String() string {
	if !s.ok {
		return "–"
	}
	if s.spread < 0.005 {
		return num(s.median)
	}
	return fmt.Sprintf("%s ±%.0f%%", num(s.median), 100*s.spread)
}

func (r *results) runs(name string) int {
	n := 0
	for _, vs := range r.values[name] {
		n = max(n, len(vs))
	}
	return n
}

// httpTables writes one table per benchmark (framework) and caller case.
func (r *results) httpTables(w io.Writer, bench string) {
	cases := []string{}
	for _, n := range r.names {
		if strings.HasPrefix(n, bench+"/") && !slices.Contains(cases, param(n, "callers")) {
			cases = append(cases, param(n, "callers"))
		}
	}
	for _, c := range cases {
		base := bench + "/limiter=baseline/callers=" + c
		bt, ba := r.stat(base, "ns/op"), r.stat(base, "allocs/op")
		fmt.Fprintf(w, "\n%s, callers=%s (median of %d runs; ± is the largest deviation from it)\n\n", strings.TrimPrefix(bench, "Benchmark"), c, r.runs(base))
		fmt.Fprintln(w, "| limiter | ns/op | overhead ns | allocs/op | overhead allocs | B/op |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
		for _, n := range r.names {
			if !strings.HasPrefix(n, bench+"/") || param(n, "callers") != c {
				continue
			}
			t, a := r.stat(n, "ns/op"), r.stat(n, "allocs/op")
			over, overA := "–", "–"
			if bt.ok && n != base {
				over = num(t.median - bt.median)
				overA = num(a.median - ba.median)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", param(n, "limiter"), t, over, a, overA, r.stat(n, "B/op"))
		}
	}
}

// table writes one row per benchmark under prefix, with the given units.
func (r *results) table(w io.Writer, prefix string, units ...string) {
	var rows []string
	for _, n := range r.names {
		if strings.HasPrefix(n, prefix+"/") {
			rows = append(rows, n)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (median of %d runs; ± is the largest deviation from it)\n\n", strings.TrimPrefix(prefix, "Benchmark"), r.runs(rows[0]))
	fmt.Fprintf(w, "| case | %s |\n|---|%s\n", strings.Join(units, " | "), strings.Repeat("---:|", len(units)))
	for _, n := range rows {
		cells := []string{strings.TrimPrefix(n, prefix+"/")}
		for _, u := range units {
			cells = append(cells, r.stat(n, u).String())
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

func main() {
	r := &results{values: make(map[string]map[string][]float64)}
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		err = r.read(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", path+":", err)
			os.Exit(1)
		}
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	r.httpTables(w, "BenchmarkGin")
	r.httpTables(w, "BenchmarkEcho")
	r.httpTables(w, "BenchmarkEcho5")
	r.table(w, "BenchmarkMemory", "B/caller", "B/caller-idle", "%held-idle", "ns/new-caller")
	r.table(w, "BenchmarkRedis", "decisions/s", "redis-µs/op", "roundtrips/op", "ns/op", "allocs/op", "B/op")
	r.table(w, "BenchmarkFlood", "denied/s", "redis-µs/denied", "cmds/denied", "roundtrips/denied", "%allowed", "allocs/op")
	r.targets(w)
	r.likeForLike(w)
	r.redisTargets(w)
}

// ratio returns the median over the runs of a's unit divided by b's, each
// run's pair taken together when both have a value from every run (run.sh
// runs every benchmark once per pass), so that a change of the machine's
// load between passes cancels out; otherwise the ratio of the medians.
func (r *results) ratio(a, b, unit string) (float64, bool) {
	x, y := r.values[a][unit], r.values[b][unit]
	if len(x) == 0 || len(y) == 0 {
		return 0, false
	}
	if len(x) != len(y) {
		if m := r.stat(b, unit).median; m != 0 {
			return r.stat(a, unit).median / m, true
		}
		return 0, false
	}
	q := make([]float64, 0, len(x))
	for i := range x {
		if y[i] != 0 {
			q = append(q, x[i]/y[i])
		}
	}
	if len(q) == 0 {
		return 0, false
	}
	slices.Sort(q)
	m := q[len(q)/2]
	if len(q)%2 == 0 {
		m = (q[len(q)/2-1] + q[len(q)/2]) / 2
	}
	return m, true
}

// redisTargets writes the table of issue 22's Redis targets: ratescope
// with two limits against ulule with one, in Redis time per decision and
// in decisions a second, each the median of the per-pass ratios.
func (r *results) redisTargets(w io.Writer) {
	type row struct{ target, measured, verdict string }
	var rows []row
	for _, c := range []struct {
		callers, goroutines string
		most, least         float64 // redis-µs ratio at most, decisions/s ratio at least
	}{
		{"10k", "32", 1.0, 1.2},
		{"1", "32", 1.0, 1.2},
		{"10k", "8", 0, 1.0},
		{"1", "8", 0, 1.0},
	} {
		suffix := "/callers=" + c.callers + "/goroutines=" + c.goroutines
		ours, theirs := "BenchmarkRedis/limiter=ratescope/limits=2"+suffix, "BenchmarkRedis/limiter=ulule/limits=1"+suffix
		where := "callers=" + c.callers + ", " + c.goroutines + " goroutines"
		if c.most > 0 {
			if q, ok := r.ratio(ours, theirs, "redis-µs/op"); ok {
				rows = append(rows, row{fmt.Sprintf("%s: Redis µs per decision ≤ %.1f× ulule's one-limit script", where, c.most),
					fmt.Sprintf("%.2f× (ratescope %s µs, ulule %s µs)", q, r.stat(ours, "redis-µs/op"), r.stat(theirs, "redis-µs/op")), verdict(q <= c.most)})
			}
		}
		if q, ok := r.ratio(ours, theirs, "decisions/s"); ok {
			rows = append(rows, row{fmt.Sprintf("%s: decisions/s ≥ %.1f× ulule with one limit", where, c.least),
				fmt.Sprintf("%.2f× (ratescope %s/s, ulule %s/s)", q, r.stat(ours, "decisions/s"), r.stat(theirs, "decisions/s")), verdict(q >= c.least)})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "\nRedis against the targets (issue 22; ratescope with two limits, ulule with one; each ratio the median of the per-pass ratios)\n\n| target | measured | verdict |\n|---|---|---|\n")
	for _, x := range rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", x.target, x.measured, x.verdict)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// onePeerLibraries are the one-window variants of the peer libraries (the
// hand-rolled x/time/rate map is no library).
var onePeerLibraries = []string{"ulule-1w", "throttled-1w", "sethvargo-1w", "httprate-1w", "tollbooth-1w", "echo-1w"}

// overhead returns the median of unit for limiter in bench and caller case
// c, minus the median of the same for against (the baseline, or nop).
//
// When both have a value from every run (run.sh runs every benchmark once
// per pass), it is the median of the differences within each run instead,
// so that a change of the machine's load between passes cancels out.
func (r *results) overhead(bench, limiter, against, c, unit string) (float64, bool) {
	name, base := bench+"/limiter="+limiter+"/callers="+c, bench+"/limiter="+against+"/callers="+c
	t, b := r.values[name][unit], r.values[base][unit]
	if len(t) == 0 || len(b) == 0 {
		return 0, false
	}
	if len(t) != len(b) {
		return r.stat(name, unit).median - r.stat(base, unit).median, true
	}
	d := make([]float64, len(t))
	for i := range t {
		d[i] = t[i] - b[i]
	}
	slices.Sort(d)
	m := d[len(d)/2]
	if len(d)%2 == 0 {
		m = (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return m, true
}

// targets writes the table of issue 13's targets, for the HTTP and Redis
// results read: each ratio of overheads (over the baseline of the same
// runs; see overhead), and the allocations beyond a middleware that does
// nothing (the framework's own cost of any middleware).
func (r *results) targets(w io.Writer) {
	type row struct{ target, measured, verdict string }
	var rows []row
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	ratio := func(bench, c, vs string, most float64, target string) {
		ours, ok1 := r.overhead(bench, "ratescope", "baseline", c, "ns/op")
		theirs, ok2 := r.overhead(bench, vs, "baseline", c, "ns/op")
		if !ok1 || !ok2 || theirs <= 0 {
			return
		}
		rows = append(rows, row{target, fmt.Sprintf("%.2f× (ratescope +%s ns, %s +%s ns)", ours/theirs, num(ours), vs, num(theirs)), verdict(ours/theirs <= most)})
	}
	for _, c := range []string{"1", "10k"} {
		bench := "BenchmarkGin"
		fastest, best := "", math.Inf(1)
		for _, p := range onePeerLibraries {
			if o, ok := r.overhead(bench, p, "baseline", c, "ns/op"); ok && o < best {
				fastest, best = p, o
			}
		}
		if fastest != "" {
			ratio(bench, c, fastest, 0.6, "Gin, callers="+c+": ≤ 0.6× the fastest peer library doing one window")
		}
		ratio(bench, c, "xrate-1w", 2, "Gin, callers="+c+": ≤ 2× the x/time/rate map doing one window")
		ratio("BenchmarkEcho", c, "echo-1w", 1, "Echo, callers="+c+": ≤ 1.0× Echo's RateLimiter doing one window")
		for _, bench := range []string{"BenchmarkGin", "BenchmarkEcho"} {
			a, ok1 := r.overhead(bench, "ratescope", "nop", c, "allocs/op")
			b, ok2 := r.overhead(bench, "ratescope", "nop", c, "B/op")
			if ok1 && ok2 {
				rows = append(rows, row{strings.TrimPrefix(bench, "Benchmark") + ", callers=" + c + ": ≤ 2 allocations and 200 B beyond the framework's own (the nop middleware)",
					fmt.Sprintf("+%s allocs, +%s B", num(a), num(b)), verdict(a <= 2 && b <= 200)})
			}
		}
	}
	if d := r.stat("BenchmarkRedis/limiter=ratescope/limits=2/callers=10k/goroutines=32", "decisions/s"); d.ok {
		rt := r.stat("BenchmarkRedis/limiter=ratescope/limits=2/callers=10k/goroutines=32", "roundtrips/op")
		rows = append(rows, row{"Redis: ≥ 60,000 decisions/s with two limits at 10,000 callers, one script call each",
			fmt.Sprintf("%s decisions/s, %s round trips per decision", d, rt), verdict(d.median >= 60000)})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "\nAgainst the targets (issue 13; overhead = median over the runs of the contender minus the baseline of the same run)\n\n| target | measured | verdict |\n|---|---|---|\n")
	for _, x := range rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", x.target, x.measured, x.verdict)
	}
}

// likeForLike writes issue 22's tables: ratescope with its fields on every
// response against the peers that write headers on every response
// (benchmarks.HeaderWriters), and ratescope with its fields on refusals
// only against the peers that write none (benchmarks.Headerless), each
// overhead the median of the per-pass differences from the baseline;
// then the targets, each against the fastest peer of its class doing one
// window (the "-1w" rows) and doing both (stacked).
func (r *results) likeForLike(w io.Writer) {
	type column struct{ bench, callers, title string }
	var cols []column
	for _, bench := range []string{"BenchmarkGin", "BenchmarkEcho", "BenchmarkEcho5"} {
		for _, c := range []string{"1", "10k"} {
			if _, ok := r.overhead(bench, "ratescope", "baseline", c, "ns/op"); ok {
				cols = append(cols, column{bench, c, strings.TrimPrefix(bench, "Benchmark") + ", callers=" + c})
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	cell := func(col column, limiter string) string {
		o, ok := r.overhead(col.bench, limiter, "baseline", col.callers, "ns/op")
		if !ok {
			return "–"
		}
		return signed(o)
	}
	table := func(title string, rows []string) {
		fmt.Fprintf(w, "\n%s (overhead ns over the baseline, median of the per-pass differences of %d passes)\n\n| limiter |", title, r.runs(cols[0].bench+"/limiter=baseline/callers="+cols[0].callers))
		for _, c := range cols {
			fmt.Fprintf(w, " %s |", c.title)
		}
		fmt.Fprint(w, "\n|---|"+strings.Repeat("---:|", len(cols))+"\n")
		for _, row := range rows {
			fmt.Fprintf(w, "| %s |", row)
			for _, c := range cols {
				fmt.Fprintf(w, " %s |", cell(c, row))
			}
			fmt.Fprintln(w)
		}
	}
	with := func(names []string, suffix string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = n + suffix
		}
		return out
	}
	table("Like for like, headers on every response: ratescope (core.HeadersAll) and the peers that write headers",
		slices.Concat([]string{"ratescope"}, benchmarks.HeaderWriters, with(benchmarks.HeaderWriters, "-1w")))
	table("Like for like, no headers on a served response: ratescope on refusals only (core.HeadersRefused) and with none (core.HeadersNone), and the peers that write none",
		slices.Concat([]string{"ratescope-refused", "ratescope-none"}, benchmarks.Headerless, with(benchmarks.Headerless, "-1w")))

	type row struct{ target, measured, verdict string }
	var rows []row
	// against compares ours with the fastest of peers in col, at most
	// most times its overhead.
	against := func(col column, ours string, peers []string, most float64, target string) {
		o, ok := r.overhead(col.bench, ours, "baseline", col.callers, "ns/op")
		if !ok {
			return
		}
		fastest, best := "", math.Inf(1)
		for _, p := range peers {
			if v, ok := r.overhead(col.bench, p, "baseline", col.callers, "ns/op"); ok && v < best {
				fastest, best = p, v
			}
		}
		if fastest == "" || best <= 0 {
			return
		}
		rows = append(rows, row{target, fmt.Sprintf("%.2f× (%s %s ns, %s %s ns)", o/best, ours, signed(o), fastest, signed(best)), verdict(o/best <= most)})
	}
	for _, col := range cols {
		fw := strings.TrimPrefix(col.bench, "Benchmark")
		for _, v := range []struct{ suffix, what string }{{"-1w", "doing one window"}, {"", "doing both (stacked)"}} {
			against(col, "ratescope", with(benchmarks.HeaderWriters, v.suffix), 0.5,
				fmt.Sprintf("%s: headers on every response ≤ 0.5× the fastest header-writing peer %s", col.title, v.what))
		}
		peer, most := "xrate", 1.5
		if fw == "Echo" {
			peer, most = "echo", 0.8
		}
		for _, v := range []struct{ suffix, what string }{{"-1w", "doing one window"}, {"", "doing both (stacked)"}} {
			against(col, "ratescope-refused", []string{peer + v.suffix}, most,
				fmt.Sprintf("%s: headers on refusals only ≤ %.1f× %s %s", col.title, most, map[string]string{"xrate": "the x/time/rate map", "echo": "Echo's RateLimiter"}[peer], v.what))
		}
		for _, lim := range []string{"ratescope", "ratescope-refused", "ratescope-none"} {
			a, ok1 := r.overhead(col.bench, lim, "nop", col.callers, "allocs/op")
			b, ok2 := r.overhead(col.bench, lim, "nop", col.callers, "B/op")
			if ok1 && ok2 {
				rows = append(rows, row{col.title + ", " + lim + ": ≤ 2 allocations and 200 B beyond the framework's own (the nop middleware)",
					fmt.Sprintf("%+.0f allocs, %+.0f B", a, b), verdict(a <= 2 && b <= 200)})
			}
		}
	}
	fmt.Fprint(w, "\nLike for like against the targets (issue 22; overhead = median over the passes of the row minus the baseline of the same pass)\n\n| target | measured | verdict |\n|---|---|---|\n")
	for _, x := range rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", x.target, x.measured, x.verdict)
	}
}

// signed returns num(v) with its sign, + for 0 and above.
func signed(v float64) string {
	if v < 0 {
		return num(v)
	}
	return "+" + num(v)
}
