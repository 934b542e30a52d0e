package replay

import (
	"bytes"
	"cmp"
	"slices"
	"time"
)

// maxPoints is the most points of a caller's series of requests per
// minute: a day of minutes. A longer log puts 2, 4, ... minutes in a
// point, each point the busiest of its minutes.
const maxPoints = 1440

// maxSeries is the most callers of one scope and kind whose requests per
// minute are kept for the report's chart.
const maxSeries = 32

// callerStat is what is known of one caller in one scope and kind.
type callerStat struct {
	requests, refused int64
	minute, minuteN   int64 // the clock minute (Unix seconds / 60) and its requests
	peakMinute        int64
	day, dayN         int64 // the UTC day and its requests
	peakDay           int64
	first, last       int64  // Unix seconds of its first and last request
	minutesOver       int64  // clock minutes above the per-minute limit of -rates
	whatIf            uint64 // bit i: refused at least once under what-if table i
	series            *series
	nextScan          int64 // the refusals at which it next asks for a series
	retired           bool
}

// A series is a caller's requests per minute, the busiest minute of each
// point.
type series struct {
	caller string
	stat   *callerStat // nil once the caller is retired
	final  TopCaller   // its figures once retired
	points []uint32
}

// A TopCaller is one caller of a top list: who, its requests, those
// refused, and its busiest clock minute and UTC day. The fields not in
// -json (whose shape is a contract) describe it in the HTML report.
type TopCaller struct {
	Caller     string `json:"caller"`
	Requests   int64  `json:"requests"`
	Refused    int64  `json:"refused"`
	PeakMinute int64  `json:"peak_minute"`
	PeakDay    int64  `json:"-"`
	// First and Last are the times of its first and last request.
	First, Last time.Time `json:"-"`
	// MinutesOver counts its clock minutes above the limit over a minute
	// of -rates.
	MinutesOver int64 `json:"-"`
	// Users counts, for an anonymous caller, the signed-in users seen
	// from its address (at most 100): more than one says an office or a
	// NAT, whose anonymous visitors share the caller's count.
	Users int64 `json:"-"`
}

// before reports whether a comes before b in the top list: more refused,
// then more requests, then by name.
func (a TopCaller) before(b TopCaller) bool {
	if a.Refused != b.Refused {
		return a.Refused > b.Refused
	}
	if a.Requests != b.Requests {
		return a.Requests > b.Requests
	}
	return a.Caller < b.Caller
}

// group is the statistics of one scope and kind.
type group struct {
	scope string
	kind  int
	info  scopeInfo

	requests int64
	refused  []int64 // per table: 0 is -rates, 1... the what-if tables
	// refusedCallers per table, of the retired callers.
	refusedCallers []int64
	callers        int64 // retired callers

	live       map[caller]*callerStat
	peakMinute map[int64]int64 // peak -> callers, of retired callers
	peakDay    map[int64]int64
	top        []TopCaller // the best retired callers, sorted, at most topSize
	topSize    int
	series     []*series
	minuteLim  int64 // the per-minute limit of -rates, 0 if none
}

func newGroup(scope string, kind int, info scopeInfo, tables, topSize int) *group {
	g := &group{
		scope: scope, kind: kind, info: info,
		refused: make([]int64, tables), refusedCallers: make([]int64, tables),
		live: map[caller]*callerStat{}, peakMinute: map[int64]int64{}, peakDay: map[int64]int64{},
		topSize: topSize,
	}
	for _, r := range info.rates[kind] {
		if r.Period == 60e9 {
			g.minuteLim = r.Limit
		}
	}
	return g
}

// stat returns the statistics of c, new if needed.
func (g *group) stat(c caller) (*callerStat, bool) {
	if s, ok := g.live[c]; ok {
		return s, false
	}
	s := &callerStat{minute: -1, day: -1}
	g.live[c] = s
	return s, true
}

// count adds a request of s at Unix second t; m0 is the first minute of
// the log and width the minutes per point.
func (s *callerStat) count(t int64, m0, width int64) {
	s.requests++
	if s.requests == 1 {
		s.first = t
	}
	s.last = max(s.last, t)
	m := t / 60
	if m > s.minute {
		s.fold(m0, width)
		s.minute, s.minuteN = m, 0
	}
	s.minuteN++
	s.peakMinute = max(s.peakMinute, s.minuteN)
	d := t / 86400
	if d > s.day {
		s.day, s.dayN = d, 0
	}
	s.dayN++
	s.peakDay = max(s.peakDay, s.dayN)
}

// fold puts the count of the current minute in the caller's series.
func (s *callerStat) fold(m0, width int64) {
	if s.series == nil || s.minute < m0 {
		return
	}
	i := int((s.minute - m0) / width)
	p := &s.series.points
	for len(*p) <= i {
		*p = append(*p, 0)
	}
	(*p)[i] = max((*p)[i], uint32(min(s.minuteN, 1<<32-1)))
}

// entry returns the caller's figures.
func (s *callerStat) entry(c string) TopCaller {
	return TopCaller{
		Caller: c, Requests: s.requests, Refused: s.refused, PeakMinute: s.peakMinute, PeakDay: s.peakDay,
		First: time.Unix(s.first, 0).UTC(), Last: time.Unix(s.last, 0).UTC(), MinutesOver: s.minutesOver,
	}
}

// wantsSeries reports whether a caller with no series should get one: at
// its first refusal, at each power of two of its refusals after, and when
// it passes half the per-minute limit.
func (g *group) wantsSeries(s *callerStat) bool {
	if s.series != nil {
		return false
	}
	if s.requests == 1 && len(g.series) < maxSeries {
		return true
	}
	if s.refused > 0 && s.refused >= s.nextScan {
		s.nextScan = max(1, s.refused*2)
		return true
	}
	return g.minuteLim > 0 && s.minuteN*2 == g.minuteLim
}

// giveSeries gives s a series, taking it from the weakest holder when all
// are taken and s comes before it.
func (g *group) giveSeries(c caller, s *callerStat) {
	if len(g.series) < maxSeries {
		sr := &series{caller: c.String(), stat: s}
		g.series = append(g.series, sr)
		s.series = sr
		return
	}
	me := s.entry(c.String())
	weakest := -1
	var weak TopCaller
	for i, sr := range g.series {
		e := sr.final
		if sr.stat != nil {
			e = sr.stat.entry(sr.caller)
		}
		if weakest < 0 || weak.before(e) {
			weakest, weak = i, e
		}
	}
	if !me.before(weak) {
		return
	}
	old := g.series[weakest]
	if old.stat != nil {
		old.stat.series = nil
	}
	sr := &series{caller: me.Caller, stat: s, points: old.points[:0]}
	clear(sr.points[:cap(sr.points)])
	g.series[weakest] = sr
	s.series = sr
}

// retire folds the statistics of c into the group's counts and top list
// and forgets the caller.
func (g *group) retire(c caller, s *callerStat, m0, width int64) {
	s.fold(m0, width)
	g.callers++
	if s.refused > 0 {
		g.refusedCallers[0]++
	}
	for i := 1; i < len(g.refusedCallers); i++ {
		if s.whatIf&(1<<(i-1)) != 0 {
			g.refusedCallers[i]++
		}
	}
	g.peakMinute[s.peakMinute]++
	g.peakDay[s.peakDay]++
	e := s.entry(c.String())
	if s.series != nil {
		s.series.final, s.series.stat = e, nil
	}
	if len(g.top) < g.topSize || e.before(g.top[len(g.top)-1]) {
		i, _ := slices.BinarySearchFunc(g.top, e, func(a, b TopCaller) int {
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
		g.top = slices.Insert(g.top, i, e)
		if len(g.top) > g.topSize {
			g.top = g.top[:g.topSize]
		}
	}
	s.retired = true
	delete(g.live, c)
}

// evictOne retires the longest idle of a few live callers, to keep the
// statistics within their bound.
func (g *group) evictOne(m0, width int64) {
	var oc caller
	var os *callerStat
	n := 0
	for c, s := range g.live {
		if os == nil || s.last < os.last {
			oc, os = c, s
		}
		if n++; n == 8 {
			break
		}
	}
	if os != nil {
		g.retire(oc, os, m0, width)
	}
}

// retireAll retires every live caller, in a fixed order.
func (g *group) retireAll(m0, width int64) {
	cs := make([]caller, 0, len(g.live))
	for c := range g.live {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b caller) int {
		if x := cmp.Compare(a.user, b.user); x != 0 {
			return x
		}
		if x := bytes.Compare(a.addr[:], b.addr[:]); x != 0 {
			return x
		}
		return cmp.Compare(a.bits, b.bits)
	})
	for _, c := range cs {
		g.retire(c, g.live[c], m0, width)
	}
}

// widen halves the points of every series: two minutes a point more.
func (g *group) widen() {
	for _, sr := range g.series {
		p := sr.points
		for i := 0; i < len(p); i += 2 {
			v := p[i]
			if i+1 < len(p) {
				v = max(v, p[i+1])
			}
			p[i/2] = v
		}
		sr.points = p[:(len(p)+1)/2]
	}
}
