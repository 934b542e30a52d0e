// Package replay replays access-log lines through ratescope's limiter, on
// a clock set from each line's time, and reports who would have been
// refused. It is the engine of the ratescope command (cmd/ratescope).
//
// # Model
//
// Each line is a request. Its path chooses a scope ([Routes]); a path no
// route names is not limited. Its address, X-Forwarded-For and user make
// the request the application received (see [Settings].LoggedBy), whose
// caller the library's own Limiter.Caller finds, with the same proxy
// rules. The request is then decided by core.Limiter.AllowN on a memstore,
// the clock at the line's time, and counted if allowed, exactly as the
// application would have decided it. Each -what-if table gets a limiter of
// its own, deciding the same requests.
//
// # Memory
//
// Each store holds at most Settings.MaxEntries callers, and is swept once an
// hour of the log's time (sweeping frees memory and changes no decision). The statistics of
// callers are kept per scope and kind for at most MaxEntries callers in
// all; past that, the longest idle of a few callers is retired early: its
// figures go into the counts, the histograms of peaks and the top list,
// and if it comes back it is counted as a new caller (so "callers" can
// count it twice and its peaks are split). Below the bound the figures are
// exact. The series of requests per minute that the HTML report draws are
// kept for at most 32 callers per scope and kind, at most 1,440 points
// each; the signed-in users seen from an address, which the report counts
// to tell an office or a NAT, for at most 65,536 addresses, 100 users
// each.
package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Options are the settings of a replay.
type Options struct {
	// Settings are the limiter's.
	Settings Settings
	// Format is combined (the default), main, json, or an nginx
	// log_format string.
	Format string
	// Fields names the fields of JSON lines.
	Fields JSONFields
	// WhatIf are rate tables (SCOPE.KIND=RATE,... as -rates) to compare:
	// each is applied over Settings.Rates and decides the same requests
	// with a limiter of its own. At most 16.
	WhatIf []string
	// Top is the length of each top list. Default: 20.
	Top int
	// Progress, if not nil, is called every 65,536 lines with the number
	// of lines read so far.
	Progress func(lines int64)
	// Decided, if not nil, is called with every decision of the -rates
	// limiter, in the order of the lines.
	Decided func(Decision)
}

// A Decision is the -rates limiter's answer to the request of one line.
type Decision struct {
	// Line is the line's number, from 1, over all inputs.
	Line int64
	// Time is the line's time, the limiter's clock.
	Time time.Time
	// Scope is the scope the route gave, and Cost its cost.
	Scope string
	Cost  int64
	// Caller is who the request was counted against, as the report
	// names it; User tells a signed-in caller.
	Caller string
	User   bool
	// Allowed reports whether the limiter allowed it.
	Allowed bool
}

// sweepEvery is how often, in seconds of the log's time, the stores drop
// the callers whose windows are empty. Sweeping frees memory and changes
// no decision; a store that is full drops such callers itself before any
// other (memstore), so an hour keeps the cost of sweeps small (each visits
// every caller) without a bound passed.
const sweepEvery = 3600

// maxWhatIf is the most what-if tables of one run.
const maxWhatIf = 16

// shownSkipped is how many unreadable lines a report quotes.
const shownSkipped = 5

// A Replayer reads log lines and decides each. Build it with [New], give
// it the inputs with [Replayer.Read], and end with [Replayer.Report].
type Replayer struct {
	opt     Options
	parser  Parser
	base    *decider
	whatIf  []*decider
	tables  []string // "-rates" and the what-if tables, as given
	router  *router
	groups  []*group // by scope number * 2 + kind
	order   []*group
	tracked int // live callers, over all groups
	bound   int

	lines, skipped, unrouted int64
	examples                 []string
	firstBad                 []byte // the first line that could not be read, cut to 4 KiB
	from, to                 time.Time
	m0, width                int64 // the first minute of the log, minutes per point
	lastSweep                int64
	// users are the signed-in users seen from each anonymous caller's
	// address, for at most maxShared addresses and maxUsers users each.
	users map[caller]map[string]struct{}
}

// maxShared and maxUsers bound Replayer.users.
const maxShared, maxUsers = 1 << 16, 100

// New returns a Replayer for opt, or an error for a setting that is
// wrong: a format, a rate table, a route.
func New(opt Options) (*Replayer, error) {
	if opt.Top <= 0 {
		opt.Top = 20
	}
	if len(opt.WhatIf) > maxWhatIf {
		return nil, fmt.Errorf("-what-if: %d tables, at most %d", len(opt.WhatIf), maxWhatIf)
	}
	p, err := NewParser(opt.Format, opt.Fields)
	if err != nil {
		return nil, err
	}
	base, err := newDecider(opt.Settings, "")
	if err != nil {
		return nil, err
	}
	r := &Replayer{opt: opt, parser: p, base: base, m0: -1, width: 1, lastSweep: -1}
	r.tables = append(r.tables, opt.Settings.Rates.String())
	for _, spec := range opt.WhatIf {
		d, err := newDecider(opt.Settings, spec)
		if err != nil {
			return nil, fmt.Errorf("-what-if %q: %w", spec, err)
		}
		r.whatIf = append(r.whatIf, d)
		r.tables = append(r.tables, strings.TrimSpace(spec))
	}
	r.router = newRouter(opt.Settings.RoutesInForce(), func(s string) bool { _, ok := base.scopes[s]; return ok })
	r.bound = opt.Settings.MaxEntries
	if r.bound <= 0 {
		r.bound = 1 << 20
	}
	return r, nil
}

// ParseWhatIf splits SPEC[;SPEC...] into tables.
func ParseWhatIf(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(part) != "" {
			out = append(out, strings.TrimSpace(part))
		}
	}
	return out
}

// batchLines is how many lines the reading goroutine of [Replayer.Read]
// parses before handing them to the deciding one.
const batchLines = 4096

// entry is a line read: its fields, or why it cannot be read.
type entry struct {
	line Line
	err  error
	raw  string // the line, cut, when err is not nil
}

// batch is lines read and parsed, their fields copied into arena.
type batch struct {
	entries []entry
	arena   []byte
}

// own returns a copy of v in the batch's arena. A slice returned earlier
// stays valid when the arena grows: it keeps the array it points into.
func (b *batch) own(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	n := len(b.arena)
	b.arena = append(b.arena, v...)
	return b.arena[n:len(b.arena):len(b.arena)]
}

var errTooLong = errors.New("line longer than 1 MiB")

// Read reads every line of in. It returns only the error of reading;
// a line it cannot read is counted and skipped.
//
// One goroutine reads and parses the lines while the calling one decides
// them, in order: on two cores the parsing costs no time. Read must not
// be called concurrently with itself or [Replayer.Line].
func (r *Replayer) Read(in io.Reader) error {
	const batches = 4
	free := make(chan *batch, batches)
	full := make(chan *batch, batches)
	for range batches {
		free <- &batch{entries: make([]entry, 0, batchLines), arena: make([]byte, 0, 64*batchLines)}
	}
	done := make(chan error, 1)
	go func() {
		done <- r.produce(in, free, full)
		close(full)
	}()
	for b := range full {
		for i := range b.entries {
			r.decide(&b.entries[i])
		}
		free <- b
	}
	return <-done
}

// produce reads and parses the lines of in into batches, taken from free
// and sent to full.
func (r *Replayer) produce(in io.Reader, free <-chan *batch, full chan<- *batch) error {
	br := bufio.NewReaderSize(in, 1<<20)
	b := <-free
	b.entries, b.arena = b.entries[:0], b.arena[:0]
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: skip the rest of it.
			raw := clip(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			b.entries = append(b.entries, entry{err: errTooLong, raw: raw})
		} else if line = trimEnd(line); len(line) > 0 {
			b.entries = append(b.entries, entry{})
			e := &b.entries[len(b.entries)-1]
			if e.err = r.parser.Parse(line, &e.line); e.err != nil {
				e.raw = clip(line)
				r.keepBad(line)
			} else {
				l := &e.line
				l.Addr, l.Forwarded, l.User = b.own(l.Addr), b.own(l.Forwarded), b.own(l.User)
				l.Method, l.Path = b.own(l.Method), b.own(l.Path)
			}
		}
		if err != nil || len(b.entries) == batchLines {
			full <- b
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			b = <-free
			b.entries, b.arena = b.entries[:0], b.arena[:0]
		}
	}
}

// trimEnd returns line without its end of line.
func trimEnd(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}

// skip counts an unreadable line, and keeps the first few.
func (r *Replayer) skip(why, raw string) {
	r.skipped++
	if len(r.examples) < shownSkipped {
		r.examples = append(r.examples, fmt.Sprintf("line %d: %s: %s", r.lines, why, raw))
	}
}

// Line decides the request of one log line, without its end of line or
// with it. An empty line is no line.
func (r *Replayer) Line(b []byte) {
	b = trimEnd(b)
	if len(b) == 0 {
		return
	}
	e := entry{}
	if e.err = r.parser.Parse(b, &e.line); e.err != nil {
		e.raw = clip(b)
		r.keepBad(b)
	}
	r.decide(&e)
}

// keepBad keeps a copy of the first line that could not be read, for the
// hint of [Report.Err].
func (r *Replayer) keepBad(line []byte) {
	if r.firstBad == nil {
		r.firstBad = bytes.Clone(line[:min(len(line), 4096)])
	}
}

// decide decides the request of a line read.
func (r *Replayer) decide(e *entry) {
	r.lines++
	if r.opt.Progress != nil && r.lines&0xffff == 0 {
		r.opt.Progress(r.lines)
	}
	if e.err != nil {
		r.skip(e.err.Error(), e.raw)
		return
	}
	l := &e.line
	t := l.Time
	if r.from.IsZero() || t.Before(r.from) {
		r.from = t
	}
	if t.After(r.to) {
		r.to = t
	}
	sid, cost, ok := r.router.route(l.Path)
	scope := sid.name
	if !ok {
		r.unrouted++
		return
	}
	sec := t.Unix()
	if r.m0 < 0 {
		r.m0 = sec / 60
		r.lastSweep = sec
	}
	if sec-r.lastSweep >= sweepEvery {
		r.base.sweep(t)
		for _, d := range r.whatIf {
			d.sweep(t)
		}
		r.lastSweep = sec
	}
	for sec/60-r.m0 >= maxPoints*r.width {
		r.width *= 2
		for _, g := range r.order {
			g.widen()
		}
	}
	k := r.base.caller(l)
	c := k.id
	g := r.group(sid, c.kind())
	s, isNew := k.stat, false
	if k.group != g || s == nil || s.retired {
		s, isNew = g.stat(c)
		k.group, k.stat = g, s
	}
	if isNew {
		r.tracked++
		if r.tracked > r.bound {
			r.evict(g, c)
		}
	}
	s.count(sec, r.m0, r.width)
	if g.minuteLim > 0 && s.minuteN == g.minuteLim+1 {
		s.minutesOver++
	}
	if c.user != "" && !k.seen {
		k.seen = true
		r.sawUser(k.addr, c.user)
	}
	g.requests++
	allowed := r.base.allow(scope, k, cost, t)
	if !allowed {
		s.refused++
		g.refused[0]++
	}
	if r.opt.Decided != nil {
		r.opt.Decided(Decision{Line: r.lines, Time: t, Scope: scope, Cost: cost, Caller: c.String(), User: c.user != "", Allowed: allowed})
	}
	for i, d := range r.whatIf {
		if !d.allow(scope, k, cost, t) {
			s.whatIf |= 1 << i
			g.refused[i+1]++
		}
	}
	if g.wantsSeries(s) {
		g.giveSeries(c, s)
	}
}

// sawUser counts user as seen from the address of the anonymous caller
// addr.
func (r *Replayer) sawUser(addr caller, user string) {
	if addr == (caller{}) {
		return // an unknown address is no one's
	}
	if r.users == nil {
		r.users = map[caller]map[string]struct{}{}
	}
	set, ok := r.users[addr]
	if !ok {
		if len(r.users) >= maxShared {
			return
		}
		set = map[string]struct{}{}
		r.users[addr] = set
	}
	if len(set) < maxUsers {
		set[user] = struct{}{}
	}
}

// evict retires a caller other than c, the longest idle of a few of the
// biggest group.
func (r *Replayer) evict(g *group, c caller) {
	big := g
	for _, o := range r.order {
		if len(o.live) > len(big.live) {
			big = o
		}
	}
	s := big.live[c]
	if big == g {
		delete(big.live, c) // keep the new caller out of the choice
	}
	big.evictOne(r.m0, r.width)
	if big == g {
		big.live[c] = s
	}
	r.tracked--
}

// group returns the statistics of scope and kind, new if needed.
func (r *Replayer) group(scope scopeID, kind int) *group {
	i := scope.id*2 + kind
	if i < len(r.groups) && r.groups[i] != nil {
		return r.groups[i]
	}
	for len(r.groups) <= i {
		r.groups = append(r.groups, nil)
	}
	g := newGroup(scope.name, kind, r.base.scopes[scope.name], len(r.tables), r.opt.Top)
	r.groups[i] = g
	r.order = append(r.order, g)
	return g
}

// Report ends the replay: every caller's figures are counted, and the
// report made. Call it once, after the last Read.
func (r *Replayer) Report() *Report {
	slices.SortFunc(r.order, func(a, b *group) int {
		if a.scope != b.scope {
			return strings.Compare(a.scope, b.scope)
		}
		return a.kind - b.kind
	})
	rep := &Report{
		Lines: r.lines, Skipped: r.skipped, Unrouted: r.unrouted, SkippedExamples: r.examples,
		From: r.from, To: r.to, Tables: r.tables, MinutesPerPoint: r.width,
		format: r.opt.Format, routes: r.opt.Settings.RoutesInForce(), readsAs: readsAs(r.firstBad, r.opt.Format),
	}
	if r.m0 >= 0 {
		rep.Start = time.Unix(r.m0*60, 0).UTC()
	}
	users := make(map[string]int64, len(r.users))
	for addr, set := range r.users {
		users[addr.String()] = int64(len(set))
	}
	for _, g := range r.order {
		g.retireAll(r.m0, r.width)
		gr := g.report(r)
		if g.kind == 0 {
			for i := range gr.Top {
				gr.Top[i].Users = users[gr.Top[i].Caller]
			}
		}
		rep.Groups = append(rep.Groups, gr)
	}
	return rep
}
