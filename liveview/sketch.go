package liveview

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"maps"
	"math/bits"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ratescope/ratescope/core"
)

// A sketch finds the callers refused most in the last 15 to 30 minutes,
// in memory bounded by its capacity k whatever the number of callers. It
// keeps two summaries of the Space-Saving algorithm (Metwally, Agrawal and
// El Abbadi, 2005), one per period of [seconds]: the current period's and
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
	// turns counts the turns of the periods, for a snapshot to tell that
	// the summaries it reads turned meanwhile.
	turns int
	// between, if not nil, is called by a snapshot between two chunks,
	// without the lock: a test's hook.
	between func()
	// pending are the resets asked for callers kept without their id
	// (longID), by scope and caller, with the time they were asked: each is
	// made at the caller's next refusal, the first time the view holds the
	// caller's value again.
	pending map[place]int64
}

// A place is a caller in a scope.
type place struct {
	scope string
	who   who
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
	caller      core.Caller // as the limiter gave it; the zero Caller when long is not nil
	long        *longID     // what is kept of a user id longer than maxID, or nil
	hash        uint64
	count, err  int64
	first, last int64
	reset       int64 // the caller's last reset, or 0
	// limit is the limit that refused the caller's last refusal counted,
	// and until when it refuses (Unix ns): the zero Rate and 0 when that
	// refusal named none (a balance scope's).
	limit   core.Rate
	until   int64
	at      int32 // its index in heap
	pending bool  // a reset is pending (a snapshot's copy only)
}

// maxID is the length, in bytes, of the longest user id (or key) that the
// view keeps: the stores' bound. A caller chooses its id's length; of a
// longer one the view keeps a longID.
const maxID = 64

// A longID is what an entry keeps of a user id (or key) longer than
// maxID, in place of the caller: who the caller is, as the stores count
// it, "sha256:" and the id's SHA-256 digest in hex; the first bytes of
// the caller as core.Caller.String writes it, a copy, for the page; and
// the id's length.
type longID struct {
	user string
	head string
	size int
}

// headLen is how many bytes of a long id the page shows.
const headLen = 32

// newLongID returns what an entry keeps of c, whose user id is longer
// than maxID and whose digest form is user.
func newLongID(c core.Caller, user string) *longID {
	str, n := c.String(), headLen // len(str) > maxID > headLen
	for n > 0 && !utf8.RuneStart(str[n]) {
		n-- // not a rune cut in two
	}
	return &longID{user: user, head: strings.Clone(str[:n]), size: len(c.User())}
}

// String writes l for the page: its first bytes, its length and the start
// of its digest.
func (l *longID) String() string {
	return fmt.Sprintf("%s… (%d bytes, %s)", l.head, l.size, l.user[:len("sha256:")+16])
}

// who returns who e's caller is.
func (e *entry) who() who {
	if e.long != nil {
		return who{user: e.long.user}
	}
	return whoOf(e.caller)
}

// callerString returns e's caller as the page writes it.
func (e *entry) callerString() string {
	if e.long != nil {
		return e.long.String()
	}
	return e.caller.String()
}

// period is the length of a sketch's period, in nanoseconds.
const period = int64(seconds) * 1e9

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
func (s *sketch) hashOf(scope string, w who) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(scope)
	h.WriteByte(0)
	h.WriteString(w.user)
	h.WriteByte(0)
	a := w.network.Addr().As16()
	_, _ = h.Write(a[:])
	h.WriteByte(byte(w.network.Bits() + 1))
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
	default:
		return
	}
	s.turns++
	// A caller not refused for a period is no longer listed.
	maps.DeleteFunc(s.pending, func(_ place, at int64) bool { return now-at >= period })
}

// add counts a refusal of c in scope at now by limit, which refuses until
// then (the zero Rate and 0 for a refusal that names no limit), and
// reports whether a reset of c in scope is pending ([sketch.pend]): it is
// no longer, and the caller makes it.
func (s *sketch) add(scope string, c core.Caller, now int64, limit core.Rate, until int64) bool {
	w := whoOf(c)
	h := s.hashOf(scope, w)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn(now)
	s.sums[s.cur].add(h, scope, w, c, now, limit, until)
	if len(s.pending) == 0 {
		return false
	}
	p := place{scope: scope, who: w}
	_, ok := s.pending[p]
	delete(s.pending, p)
	return ok
}

// pend records, at now, that a reset of w in scope is asked for, to be
// made at w's next refusal.
func (s *sketch) pend(scope string, w who, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[place]int64{}
	}
	s.pending[place{scope: scope, who: w}] = now
}

// markReset records that c's counts in scope were reset at now, in the
// summaries that keep c.
func (s *sketch) markReset(scope string, c core.Caller, now int64) {
	w := whoOf(c)
	h := s.hashOf(scope, w)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sums {
		if e := s.sums[i].get(h, scope, w); e != nil {
			e.reset = now
		}
	}
}

// chunk is how many entries a snapshot reads under the lock at a time:
// between chunks it lets the refusals in.
const chunk = 1024

// snapshot returns, best first (rank), the n callers of both summaries,
// merged, refused most and last refused after since, and the number of
// refusals counted. It reads the summaries a chunk at a time, releasing
// the lock between chunks, and keeps n callers at most: however many
// callers the sketch keeps, a refusal waits for one chunk, never for the
// whole snapshot. The summaries may change between chunks; what it
// returns is then as of some time during the snapshot for each caller (a
// caller evicted and kept again meanwhile may be missed, or read twice and
// listed once).
func (s *sketch) snapshot(now, since int64, n int) ([]entry, int64) {
	var (
		best  top
		total int64
	)
scan:
	for {
		s.mu.Lock()
		s.turn(now)
		turns := s.turns
		total = s.sums[0].total + s.sums[1].total
		s.mu.Unlock()
		best = top{n: n}
		// The previous summary first: it changes no more in its period
		// but for resets (markReset), so that a caller of both is found in
		// the current one when the current one is read.
		for _, prevPhase := range []bool{true, false} {
			for i := 0; ; i += chunk {
				s.mu.Lock()
				if s.turns != turns {
					s.mu.Unlock()
					continue scan // the periods turned: read them again
				}
				cur, prev := &s.sums[s.cur], &s.sums[1-s.cur]
				m := cur
				if prevPhase {
					m = prev
				}
				if i >= len(m.entries) {
					s.mu.Unlock()
					break
				}
				for _, e := range m.entries[i:min(i+chunk, len(m.entries))] {
					if e.last <= since {
						continue
					}
					if prevPhase {
						if cur.get(e.hash, e.scope, e.who()) != nil {
							continue // read with the current summary
						}
						e.count += cur.floor()
						e.err += cur.floor()
					} else if p := prev.get(e.hash, e.scope, e.who()); p != nil {
						e.count += p.count
						e.err += p.err
						e.first = min(e.first, p.first)
						e.reset = max(e.reset, p.reset)
					} else {
						e.count += prev.floor()
						e.err += prev.floor()
					}
					best.push(e)
				}
				s.mu.Unlock()
				if s.between != nil {
					s.between()
				}
			}
		}
		break
	}
	out := best.sorted()
	s.mu.Lock()
	if len(s.pending) != 0 {
		for i := range out {
			_, out[i].pending = s.pending[place{scope: out[i].scope, who: out[i].who()}]
		}
	}
	s.mu.Unlock()
	return out, total
}

// A top keeps the n entries that rank first of those pushed.
type top struct {
	n int
	h []entry // a heap whose root ranks last of those kept
}

// push offers e.
func (t *top) push(e entry) {
	switch {
	case len(t.h) < t.n:
		t.h = append(t.h, e)
		for i := len(t.h) - 1; i > 0 && t.after(i, (i-1)/2); i = (i - 1) / 2 {
			t.h[i], t.h[(i-1)/2] = t.h[(i-1)/2], t.h[i]
		}
	case t.n > 0 && rank(&e, &t.h[0]) < 0:
		t.h[0] = e
		for i := 0; ; {
			last := i
			if l := 2*i + 1; l < len(t.h) && t.after(l, last) {
				last = l
			}
			if r := 2*i + 2; r < len(t.h) && t.after(r, last) {
				last = r
			}
			if last == i {
				return
			}
			t.h[i], t.h[last] = t.h[last], t.h[i]
			i = last
		}
	}
}

// after reports whether the entry at i ranks after the one at j.
func (t *top) after(i, j int) bool { return rank(&t.h[i], &t.h[j]) > 0 }

// sorted returns the entries kept, best first, each caller once.
func (t *top) sorted() []entry {
	slices.SortFunc(t.h, func(a, b entry) int { return rank(&a, &b) })
	seen := make(map[place]bool, len(t.h))
	return slices.DeleteFunc(t.h, func(e entry) bool {
		p := place{scope: e.scope, who: e.who()}
		if seen[p] {
			return true
		}
		seen[p] = true
		return false
	})
}

// rank orders entries as the view lists them: the most refused first,
// then the last refused most recently, then by scope and caller.
func rank(a, b *entry) int {
	if c := cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(b.last, a.last)); c != 0 {
		return c // the case of almost every entry a snapshot reads
	}
	wa, wb := a.who(), b.who()
	return cmp.Or(cmp.Compare(a.scope, b.scope), cmp.Compare(wa.user, wb.user),
		wa.network.Addr().Compare(wb.network.Addr()), cmp.Compare(wa.network.Bits(), wb.network.Bits()))
}

// A who is a caller as the store counts it, and as the sketch tells
// callers apart: its user id (or key) and its network. A Caller holds more
// than that (what core.Limiter.Caller found of the request's address
// against the exempt networks), so that the caller built by
// core.UserCaller or core.Limiter.AddrCaller for a reset is not == to the
// caller the limiter built from a request, though it names the same
// counts; their whos are ==.
type who struct {
	user    string
	network netip.Prefix
}

// whoOf returns who c is: for a user id (or key) longer than maxID, the
// form a store counts it by, "sha256:" and its SHA-256 digest in hex, so
// that the view keeps as little of it as a store does.
func whoOf(c core.Caller) who {
	u := c.User()
	if len(u) > maxID {
		// Through a small buffer: []byte(u) would copy the whole id.
		h, buf := sha256.New(), make([]byte, 4096)
		for rest := u; rest != ""; {
			n := copy(buf, rest)
			_, _ = h.Write(buf[:n]) // a hash.Hash never fails
			rest = rest[n:]
		}
		b := make([]byte, 0, len("sha256:")+hex.EncodedLen(sha256.Size))
		b = append(b, "sha256:"...)
		return who{user: string(hex.AppendEncode(b, h.Sum(nil)))}
	}
	return who{user: u, network: c.Network()}
}

// kind returns the kind of caller w is.
func (w who) kind() core.Kind {
	if w.user != "" {
		return core.User
	}
	return core.Anonymous
}

// Row references: a caller's kind and the bytes of its user id (or key)
// or network, in base64url without padding, so that every caller, whatever
// bytes its id holds, is named exactly and only by its own reference
// through HTML, JSON and a form.
const (
	userRef = "user:"
	anonRef = "anon:"
)

// ref returns w's row reference.
func (w who) ref() string {
	if w.user != "" {
		return userRef + base64.RawURLEncoding.EncodeToString([]byte(w.user))
	}
	if !w.network.IsValid() {
		return anonRef // the anonymous caller whose address is unknown
	}
	b, _ := w.network.MarshalBinary() // a valid Prefix always marshals
	return anonRef + base64.RawURLEncoding.EncodeToString(b)
}

// parseRef returns the caller that the row reference ref names.
func parseRef(ref string) (who, error) {
	if rest, ok := strings.CutPrefix(ref, userRef); ok {
		b, err := base64.RawURLEncoding.DecodeString(rest)
		if err != nil || len(b) == 0 {
			return who{}, fmt.Errorf("reference %q: want %s and a user id in base64url", ref, userRef)
		}
		return who{user: string(b)}, nil
	}
	if rest, ok := strings.CutPrefix(ref, anonRef); ok {
		if rest == "" {
			return who{}, nil
		}
		var p netip.Prefix
		b, err := base64.RawURLEncoding.DecodeString(rest)
		if err == nil {
			err = p.UnmarshalBinary(b)
		}
		if err != nil || !p.IsValid() {
			return who{}, fmt.Errorf("reference %q: want %s and a network in base64url", ref, anonRef)
		}
		return who{network: p}, nil
	}
	return who{}, fmt.Errorf("reference %q: want %s or %s and base64url", ref, userRef, anonRef)
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

// find returns the slot of the table that holds scope and w, or the empty
// slot where they would go, and whether they are there.
func (m *summary) find(h uint64, scope string, w who) (uint64, bool) {
	for i := h & m.mask; ; i = (i + 1) & m.mask {
		x := m.table[i]
		if x == 0 {
			return i, false
		}
		e := &m.entries[x-1]
		if e.hash == h && e.scope == scope && e.who() == w {
			return i, true
		}
	}
}

// get returns the entry of scope and w, or nil.
func (m *summary) get(h uint64, scope string, w who) *entry {
	if slot, ok := m.find(h, scope, w); ok {
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

// add counts a refusal of c, who is w, in scope at now by limit until
// until; h is their hash.
func (m *summary) add(h uint64, scope string, w who, c core.Caller, now int64, limit core.Rate, until int64) {
	m.total++
	slot, ok := m.find(h, scope, w)
	if ok {
		e := &m.entries[m.table[slot]-1]
		e.count++
		e.last, e.limit, e.until = now, limit, until
		m.down(int(e.at))
		return
	}
	var long *longID
	if len(c.User()) > maxID {
		long, c = newLongID(c, w.user), core.Caller{}
	}
	if len(m.entries) < cap(m.entries) {
		n := int32(len(m.entries))
		m.entries = append(m.entries, entry{scope: scope, caller: c, long: long, hash: h, count: 1, first: now, last: now, limit: limit, until: until, at: n})
		m.heap = append(m.heap, n)
		m.table[slot] = n + 1
		m.up(int(n))
		return
	}
	// Take the place of the caller with the smallest count.
	x := m.heap[0]
	e := &m.entries[x]
	old, _ := m.find(e.hash, e.scope, e.who())
	m.unlink(old)
	least := e.count
	*e = entry{scope: scope, caller: c, long: long, hash: h, count: least + 1, err: least, first: now, last: now, limit: limit, until: until, at: 0}
	slot, _ = m.find(h, scope, w)
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
