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
	r.table(w, "BenchmarkMemory", "B/caller", "B/caller-idle", "%held-idle", "ns/new-caller")
	r.table(w, "BenchmarkRedis", "decisions/s", "roundtrips/op", "ns/op", "allocs/op", "B/op")
	r.table(w, "BenchmarkFlood", "denied/s", "cmds/denied", "roundtrips/denied", "%allowed", "allocs/op")
}
