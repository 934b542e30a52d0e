package liveview

import (
	"hash/maphash"
	"math/bits"
	"slices"
	"sync"

	"github.com/ratescope/ratescope/core"
)

// A sketch finds the callers refused most in the last 15 to 30 minutes,
// in memory bounded by its capacity k whatever the number of callers. It
// keeps two summaries of the Space-Saving algorithm (Metwally, Agrawal and
// El Abbadi, 2005), one per period of [Seconds]: the current period's and
// the previous one's; when a period ends, the previous summary is cleared
// and becomes the current one. What it lists is the two merged.
//
// A summary keeps at most k callers, each with a count and an error. A
// refusal of a caller it keeps adds one to its count; a refusal of a
// caller it does not keep, once it keeps k, takes the place of the caller
// with the smallest count m, with count m+1 and error m. With N refusals
// in the period, m ≤ N/k, hence: a caller's count is at least its true
// number of refusals and at most that number plus its error, which is at
// most N/k; every caller refused more than N/k times is kept. Merged, a
// caller missing from a full summary is given that summary's smallest
// count, as count and as error: the guarantees hold with N the refusals of
// both periods, and every caller refused more than N/k times in them is
// kept by one summary at least, so listed.
//
// A summary's callers are held in a fixed array, indexed by an
// open-addressing hash table of fixed size and ordered by a min-heap of
// their counts, so that counting a refusal allocates nothing. A sketch is
// safe for concurrent use.
type sketch struct {
	mu    sync.Mutex
	seed  maphash.Seed
	sums  [2]summary
	cur   int   // the index in sums of the current period's summary
	start int64 // when the current period began, Unix ns; 0 before any refusal
}

// A summary is one period's Space-Saving summary.
type summary struct {
	entries []entry // len ≤ cap = k
	heap    []int32 // indexes into entries, a min-heap by count
	table   []int32 // open addressing: entry index + 1, or 0 for empty
	mask    uint64
	total   int64 // N: refusals counted
}

// An entry is one caller kept by a summary. Times are Unix nanoseconds of
// the view's clock.
type entry struct {
	scope       string
	caller      core.Caller
	hash        uint64
	count, err  int64
	first, last int64
	reset       int64 // the caller's last reset, or 0
	at          int32 // its index in heap
}

// period is the length of a sketch's period, in nanoseconds.
const period = int64(Seconds) * 1e9

// newSketch returns a sketch whose summaries keep at most k callers each,
// k ≥ 1.
func newSketch(k int) *sketch {
	s := &sketch{seed: maphash.MakeSeed()}
	size := uint64(1) << bits.Len64(uint64(2*k-1)) // a power of two ≥ 2k
	for i := range s.sums {
		s.sums[i] = summary{
			entries: make([]entry, 0, k),
			heap:    make([]int32, 0, k),
			table:   make([]int32, size),
			mask:    size - 1,
		}
	}
	return s
}

// hashOf returns the hash of a scope and caller.
func (s *sketch) hashOf(scope string, c core.Caller) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(scope)
	h.WriteByte(0)
	h.WriteString(c.User())
	h.WriteByte(0)
	a := c.Network().Addr().As16()
	_, _ = h.Write(a[:])
	h.WriteByte(byte(c.Network().Bits() + 1))
	return h.Sum64()
}

// turn starts a new period if the current one ended before now: the
// previous summary is cleared and becomes the current one (both, after
// two periods without a refusal). The caller holds mu.
func (s *sketch) turn(now int64) {
	switch {
	case s.start == 0:
		s.start = now
	case now-s.start >= 2*period:
		s.sums[0].clear()
		s.sums[1].clear()
		s.start = now
	case now-s.start >= period:
		s.cur = 1 - s.cur
		s.sums[s.cur].clear()
		s.start += period
	}
}

// add counts a refusal of c in scope at now.
func (s *sketch) add(scope string, c core.Caller, now int64) {
	h := s.hashOf(scope, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn(now)
	s.sums[s.cur].add(h, scope, c, now)
}

// markReset records that c's counts in scope were reset at now, in the
// summaries that keep c.
func (s *sketch) markReset(scope string, c core.Caller, now int64) {
	h := s.hashOf(scope, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sums {
		if e := s.sums[i].get(h, scope, c); e != nil {
			e.reset = now
		}
	}
}

// snapshot returns the callers of both summaries, merged, and the number
// of refusals they counted.
func (s *sketch) snapshot(now int64) ([]entry, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn(now)
	cur, prev := &s.sums[s.cur], &s.sums[1-s.cur]
	out := make([]entry, 0, len(cur.entries)+len(prev.entries))
	for _, e := range cur.entries {
		if p := prev.get(e.hash, e.scope, e.caller); p != nil {
			e.count += p.count
			e.err += p.err
			e.first = min(e.first, p.first)
			e.reset = max(e.reset, p.reset)
		} else {
			e.count += prev.floor()
			e.err += prev.floor()
		}
		out = append(out, e)
	}
	for _, e := range prev.entries {
		if cur.get(e.hash, e.scope, e.caller) == nil {
			e.count += cur.floor()
			e.err += cur.floor()
			out = append(out, e)
		}
	}
	return out, cur.total + prev.total
}

// lookup returns the caller kept in scope whose String is caller, and how
// many such callers are kept: two callers may write alike (the user id
// "key:k" and the caller counted by key k), and then none is returned.
func (s *sketch) lookup(scope, caller string) (core.Caller, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []core.Caller
	for i := range s.sums {
		for _, e := range s.sums[i].entries {
			if e.scope != scope || e.caller.String() != caller {
				continue
			}
			if !slices.ContainsFunc(found, func(f core.Caller) bool { return sameCaller(f, e.caller) }) {
				found = append(found, e.caller)
			}
		}
	}
	if len(found) != 1 {
		return core.Caller{}, len(found)
	}
	return found[0], 1
}

// sameCaller reports whether a and b are counted as one caller: the same
// user id (or key) and network, which is what the store keys a count by
// and what hashOf hashes. A Caller holds more than that (what
// core.Limiter.Caller found of the request's address against the exempt
// networks), so that a reset of the caller built by core.UserCaller or
// core.Limiter.AddrCaller is not == to the caller the limiter built from a
// request, though it resets its counts.
func sameCaller(a, b core.Caller) bool {
	return a.User() == b.User() && a.Network() == b.Network()
}

// clear empties m, keeping its memory.
func (m *summary) clear() {
	m.entries = m.entries[:0]
	m.heap = m.heap[:0]
	clear(m.table)
	m.total = 0
}

// floor returns the most refusals a caller m does not keep may have had
// in m's period: m's smallest count when m is full, 0 when it is not (m
// keeps every caller it saw).
func (m *summary) floor() int64 {
	if len(m.entries) < cap(m.entries) {
		return 0
	}
	return m.entries[m.heap[0]].count
}

// find returns the slot of the table that holds scope and c, or the empty
// slot where they would go, and whether they are there.
func (m *summary) find(h uint64, scope string, c core.Caller) (uint64, bool) {
	for i := h & m.mask; ; i = (i + 1) & m.mask {
		x := m.table[i]
		if x == 0 {
			return i, false
		}
		e := &m.entries[x-1]
		if e.hash == h && e.scope == scope && sameCaller(e.caller, c) {
			return i, true
		}
	}
}

// get returns the entry of scope and c, or nil.
func (m *summary) get(h uint64, scope string, c core.Caller) *entry {
	if slot, ok := m.find(h, scope, c); ok {
		return &m.entries[m.table[slot]-1]
	}
	return nil
}

// unlink removes the entry at slot i of the table, moving back the
// entries after it that would otherwise be cut off from their home slot
// (deletion by backward shift: the table never holds tombstones).
func (m *summary) unlink(i uint64) {
	m.table[i] = 0
	for j := (i + 1) & m.mask; m.table[j] != 0; j = (j + 1) & m.mask {
		home := m.entries[m.table[j]-1].hash & m.mask
		// The entry at j may move to i if i lies cyclically in [home, j).
		if (j-home)&m.mask >= (j-i)&m.mask {
			m.table[i], m.table[j] = m.table[j], 0
			i = j
		}
	}
}

// add counts a refusal of c in scope at now; h is their hash.
func (m *summary) add(h uint64, scope string, c core.Caller, now int64) {
	m.total++
	slot, ok := m.find(h, scope, c)
	if ok {
		e := &m.entries[m.table[slot]-1]
		e.count++
		e.last = now
		m.down(int(e.at))
		return
	}
	if len(m.entries) < cap(m.entries) {
		n := int32(len(m.entries))
		m.entries = append(m.entries, entry{scope: scope, caller: c, hash: h, count: 1, first: now, last: now, at: n})
		m.heap = append(m.heap, n)
		m.table[slot] = n + 1
		m.up(int(n))
		return
	}
	// Take the place of the caller with the smallest count.
	x := m.heap[0]
	e := &m.entries[x]
	old, _ := m.find(e.hash, e.scope, e.caller)
	m.unlink(old)
	least := e.count
	*e = entry{scope: scope, caller: c, hash: h, count: least + 1, err: least, first: now, last: now, at: 0}
	slot, _ = m.find(h, scope, c)
	m.table[slot] = x + 1
	m.down(0)
}

// less reports whether the entry at heap position i has a smaller count
// than the one at j.
func (m *summary) less(i, j int) bool {
	return m.entries[m.heap[i]].count < m.entries[m.heap[j]].count
}

func (m *summary) swap(i, j int) {
	m.heap[i], m.heap[j] = m.heap[j], m.heap[i]
	m.entries[m.heap[i]].at = int32(i)
	m.entries[m.heap[j]].at = int32(j)
}

func (m *summary) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !m.less(i, p) {
			return
		}
		m.swap(i, p)
		i = p
	}
}

func (m *summary) down(i int) {
	n := len(m.heap)
	for {
		least := i
		if l := 2*i + 1; l < n && m.less(l, least) {
			least = l
		}
		if r := 2*i + 2; r < n && m.less(r, least) {
			least = r
		}
		if least == i {
			return
		}
		m.swap(i, least)
		i = least
	}
}
