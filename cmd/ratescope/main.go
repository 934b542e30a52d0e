// Command ratescope answers, from the access logs you already have, what
// ratescope's limits would have done to your traffic.
//
// Usage:
//
//	ratescope replay [flags] [FILE...]
//	ratescope check [flags]
//
// replay reads access-log lines (combined, nginx's main, any nginx
// log_format, JSON lines; FILE "-" or none is standard input, a gzip file
// is read as such) and decides each request with the library's own
// limiter, on a clock set from the line's time, with the same windows,
// proxy rules and scopes as the application, and reports who would have
// been refused: a text summary, -json, or an HTML page with charts
// (-html). -what-if compares several rate tables in one run. It exits 1
// when an input cannot be read, and when the replay tells nothing (no
// line, none readable in -format, none whose path a route limits), with a
// hint after the report.
//
// check builds the same limiter from the same flags and prints the
// startup checks (E0xx, W6xx) and the scopes and limits in force; it
// exits 1 on an error, and 2 on a warning with -strict.
//
// Run "ratescope replay -h" for the flags; docs/howto/choose-limits-from-your-access-logs.md
// shows how to read the report.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ratescope/ratescope/cmd/ratescope/internal/replay"
	"github.com/ratescope/ratescope/internal/proxyflag"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  ratescope replay [flags] [FILE...]   replay access-log lines through the limiter ("-" or no FILE: standard input)
  ratescope check [flags]              print the startup checks and the limits in force
Run "ratescope replay -h" or "ratescope check -h" for the flags.
`

// run runs the command with args and returns its exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "replay":
		return runReplay(args[1:], stdin, stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "ratescope: unknown command %q\n%s", args[0], usage)
	return 2
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ratescope check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := replay.DefaultSettings()
	s.Register(fs)
	strict := fs.Bool("strict", false, "exit 2 on a warning")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	msgs, scopes, err := replay.Check(s)
	warned := false
	for _, m := range msgs {
		level := "WARNING"
		if m.Error {
			level = "ERROR"
		} else {
			warned = true
		}
		fmt.Fprintf(stdout, "%s %s: %s\n", m.ID, level, m.Text)
	}
	if err != nil {
		if len(msgs) == 0 {
			fmt.Fprintf(stdout, "ERROR: %v\n", err)
		}
		return 1
	}
	if len(msgs) == 0 {
		fmt.Fprintln(stdout, "no warnings")
	}
	fmt.Fprintf(stdout, "\nproxies: %s; trusted proxies: %s; log written by: %s\n", proxyflag.Value{N: &s.NumProxies}.String(), orNone(s.TrustedProxies.String()), s.LoggedBy)
	routes := s.RoutesInForce()
	fmt.Fprintf(stdout, "routes: %s\n\n", routes.String())
	fmt.Fprintf(stdout, "%-28s %-24s %s\n", "scope", "anon", "user")
	for _, sc := range scopes {
		fmt.Fprintf(stdout, "%-28s %-24s %s\n", sc.Scope, sc.Anon, sc.User)
		for _, p := range sc.Plans {
			fmt.Fprintf(stdout, "%-28s %-24s %s\n", sc.Scope+".user@"+p.Plan, "-", p.User)
		}
	}
	if warned && *strict {
		return 2
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func runReplay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ratescope replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ratescope replay [flags] [FILE...]\n\nFILE \"-\" or none is standard input; a gzip file is read as such.\n\n")
		fs.PrintDefaults()
	}
	opt := replay.Options{Settings: replay.DefaultSettings()}
	opt.Settings.Register(fs)
	fs.StringVar(&opt.Format, "format", "combined", "the log format: combined, main (combined and \"$http_x_forwarded_for\"), json, or an nginx log_format string ('$remote_addr - $remote_user [$time_local] \"$request\" ...')")
	fields := fs.String("json-fields", "", "the fields of JSON lines, NAME=FIELD,...: time, addr, xff, user, method, path (default "+replay.DefaultJSONFields().String()+")")
	whatIf := fs.String("what-if", "", "`SPEC[;SPEC...]`: rate tables to compare, each over -rates (e.g. 'api.anon=30/min,1000/day;api.anon=120/min,1000/day')")
	fs.IntVar(&opt.Top, "top", 20, "the callers listed per scope and kind, by refused then requests")
	asJSON := fs.Bool("json", false, "write the report as JSON")
	html := fs.String("html", "", "also write the report as a self-contained HTML page to `FILE`")
	quiet := fs.Bool("quiet", false, "no progress on standard error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if opt.Fields, err = replay.ParseJSONFields(*fields); err != nil {
		fmt.Fprintf(stderr, "ratescope: %v\n", err)
		return 2
	}
	opt.WhatIf = replay.ParseWhatIf(*whatIf)
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	var prog *progress
	if !*quiet {
		prog = newProgress(stderr, files)
		opt.Progress = prog.lines
	}
	rp, err := replay.New(opt)
	if err != nil {
		fmt.Fprintf(stderr, "ratescope: %v\n", err)
		return 2
	}
	for _, name := range files {
		if err := readInput(rp, name, stdin, prog); err != nil {
			fmt.Fprintf(stderr, "ratescope: %v\n", err)
			return 1
		}
	}
	if prog != nil {
		prog.done()
	}
	rep := rp.Report()
	if *html != "" {
		var b bytes.Buffer
		if err := rep.WriteHTML(&b); err == nil {
			err = os.WriteFile(*html, b.Bytes(), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ratescope: -html: %v\n", err)
			return 1
		}
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratescope: %v\n", err)
		return 1
	}
	if err := rep.Err(); err != nil {
		fmt.Fprintf(stderr, "ratescope: %v\n", err)
		return 1
	}
	return 0
}

// readInput replays the lines of the file name ("-": stdin), gunzipped if
// it starts as gzip does.
func readInput(rp *replay.Replayer, name string, stdin io.Reader, prog *progress) error {
	var in io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	if prog != nil {
		in = &countingReader{r: in, n: &prog.read}
	}
	br := bufio.NewReaderSize(in, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		if err := rp.Read(zr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	if err := rp.Read(br); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// progress writes a line on standard error for a long replay: a bar on a
// terminal, a line every ten seconds otherwise, from the second second on.
type progress struct {
	w        io.Writer
	terminal bool
	total    int64 // the size of the files, 0 if unknown (standard input)
	read     int64
	start    time.Time
	last     time.Time
	shown    bool
	now      func() time.Time // time.Now; a test's clock
}

func newProgress(w io.Writer, files []string) *progress {
	p := &progress{w: w, start: time.Now(), now: time.Now}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	for _, name := range files {
		if name == "-" {
			p.total = 0
			break
		}
		if fi, err := os.Stat(name); err == nil {
			p.total += fi.Size()
		}
	}
	return p
}

func (p *progress) lines(n int64) {
	now := p.now()
	every := 10 * time.Second
	if p.terminal {
		every = 200 * time.Millisecond
	}
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < every {
		return
	}
	p.last, p.shown = now, true
	secs := now.Sub(p.start).Seconds()
	text := fmt.Sprintf("ratescope: %d lines, %.0f lines/s", n, float64(n)/secs)
	if p.total > 0 {
		frac := min(float64(p.read)/float64(p.total), 1)
		text += fmt.Sprintf(", %3.0f%%", 100*frac)
		if p.terminal {
			const width = 30
			done := int(frac * width)
			text = "[" + strings.Repeat("#", done) + strings.Repeat(".", width-done) + "] " + text
		}
	}
	if p.terminal {
		fmt.Fprintf(p.w, "\r%s", text)
	} else {
		fmt.Fprintln(p.w, text)
	}
}

func (p *progress) done() {
	if p.shown && p.terminal {
		fmt.Fprintln(p.w)
	}
}
