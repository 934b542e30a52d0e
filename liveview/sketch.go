package liveview

import (
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/ratescope/ratescope/core"
)

// A sketch finds the callers refused most often, in memory bounded by its
// capacity k whatever the number of callers: the Space-Saving algorithm
// (Metwally, Agrawal and El Abbadi, 2005). It keeps at most k callers,
// each with a count and an error. A refusal of a caller it keeps adds one
// to its count; a refusal of a caller it does not keep, once it keeps k,
// takes the place of the caller with the smallest count m, with count m+1
// and error m.
//
// With N refusals seen in all, the smallest count is at most N/k, hence:
//   - a caller's count is at least its true number of refusals and at most
//     that number plus its error, and its error is at most N/k;
//   - every caller refused more than N/k times is kept.
//
// The callers are held in a fixed array, indexed by an open-addressing
// hash table of fixed size and ordered by a min-heap of their counts, so
// that counting a refusal allocates nothing. It is safe for concurrent
// use.
type sketch struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries []entry // len ≤ cap = k
	heap    []int32 // indexes into entries, a min-heap by count
	table   []int32 // open addressing: entry index + 1, or 0 for empty
	mask    uint64
	total   int64 // N: refusals counted
}

// An entry is one caller kept by a sketch. Times are Unix nanoseconds of
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

// newSketch returns a sketch that keeps at most k callers, k ≥ 1.
func newSketch(k int) *sketch {
	size := uint64(1) << bits.Len64(uint64(2*k-1)) // a power of two ≥ 2k
	return &sketch{
		seed:    maphash.MakeSeed(),
		entries: make([]entry, 0, k),
		heap:    make([]int32, 0, k),
		table:   make([]int32, size),
		mask:    size - 1,
	}
}

// hashOf returns the hash of a scope and caller.
func (s *sketch) hashOf(scope string, c core.Caller) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(scope)
	h.WriteByte(0)
	h.WriteString(c.User)
	h.WriteByte(0)
	a := c.Network.Addr().As16()
	_, _ = h.Write(a[:])
	h.WriteByte(byte(c.Network.Bits() + 1))
	return h.Sum64()
}

// find returns the slot of the table that holds scope and c, or the empty
// slot where they would go, and whether they are there.
func (s *sketch) find(h uint64, scope string, c core.Caller) (uint64, bool) {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		x := s.table[i]
		if x == 0 {
			return i, false
		}
		e := &s.entries[x-1]
		if e.hash == h && e.scope == scope && e.caller == c {
			return i, true
		}
	}
}

// unlink removes the entry at slot i of the table, moving back the
// entries after it that would otherwise be cut off from their home slot
// (deletion by backward shift: the table never holds tombstones).
func (s *sketch) unlink(i uint64) {
	s.table[i] = 0
	for j := (i + 1) & s.mask; s.table[j] != 0; j = (j + 1) & s.mask {
		home := s.entries[s.table[j]-1].hash & s.mask
		// The entry at j may move to i if i lies cyclically in [home, j).
		if (j-home)&s.mask >= (j-i)&s.mask {
			s.table[i], s.table[j] = s.table[j], 0
			i = j
		}
	}
}

// add counts a refusal of c in scope at now.
func (s *sketch) add(scope string, c core.Caller, now int64) {
	h := s.hashOf(scope, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	slot, ok := s.find(h, scope, c)
	if ok {
		e := &s.entries[s.table[slot]-1]
		e.count++
		e.last = now
		s.down(int(e.at))
		return
	}
	if len(s.entries) < cap(s.entries) {
		n := int32(len(s.entries))
		s.entries = append(s.entries, entry{scope: scope, caller: c, hash: h, count: 1, first: now, last: now, at: n})
		s.heap = append(s.heap, n)
		s.table[slot] = n + 1
		s.up(int(n))
		return
	}
	// Take the place of the caller with the smallest count.
	x := s.heap[0]
	e := &s.entries[x]
	old, _ := s.find(e.hash, e.scope, e.caller)
	s.unlink(old)
	m := e.count
	*e = entry{scope: scope, caller: c, hash: h, count: m + 1, err: m, first: now, last: now, at: 0}
	slot, _ = s.find(h, scope, c)
	s.table[slot] = x + 1
	s.down(0)
}

// markReset records that c's counts in scope were reset at now, if the
// sketch keeps c.
func (s *sketch) markReset(scope string, c core.Caller, now int64) {
	h := s.hashOf(scope, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if slot, ok := s.find(h, scope, c); ok {
		s.entries[s.table[slot]-1].reset = now
	}
}

// less reports whether the entry at heap position i has a smaller count
// than the one at j.
func (s *sketch) less(i, j int) bool {
	return s.entries[s.heap[i]].count < s.entries[s.heap[j]].count
}

func (s *sketch) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.entries[s.heap[i]].at = int32(i)
	s.entries[s.heap[j]].at = int32(j)
}

func (s *sketch) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *sketch) down(i int) {
	n := len(s.heap)
	for {
		least := i
		if l := 2*i + 1; l < n && s.less(l, least) {
			least = l
		}
		if r := 2*i + 2; r < n && s.less(r, least) {
			least = r
		}
		if least == i {
			return
		}
		s.swap(i, least)
		i = least
	}
}

// snapshot returns a copy of the entries kept and N.
func (s *sketch) snapshot() ([]entry, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]entry(nil), s.entries...), s.total
}

// lookup returns the caller kept in scope whose String is caller, and how
// many such callers it keeps: two callers may write alike (the user id
// "key:k" and the caller counted by key k), and then neither is returned.
func (s *sketch) lookup(scope, caller string) (core.Caller, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found core.Caller
	n := 0
	for i := range s.entries {
		if e := &s.entries[i]; e.scope == scope && e.caller.String() == caller {
			found = e.caller
			n++
		}
	}
	if n != 1 {
		return core.Caller{}, n
	}
	return found, n
}
