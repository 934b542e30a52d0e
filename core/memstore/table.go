package memstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/window"
)

// counts is the set of window arrays an entry can hold, one per limit, with
// counters of type T.
type counts[T window.Counter] interface {
	[1]window.Counts[T] | [2]window.Counts[T] | [3]window.Counts[T] | [4]window.Counts[T]
}

// entry is the state of one caller in one scope: the time of its last
// admitted request (nanoseconds, see Store.nanos), the time it was made at
// (born: a request counted before then was counted on an entry that has
// since been evicted, swept or reset) and one window per limit.
type entry[T window.Counter, W counts[T]] struct {
	last int64
	born int64
	w    W
}

// Entries live in chunks that grow from firstChunk to maxChunk entries, and
// a map from caller to a slot number finds them. The map's values are
// 4 bytes instead of a whole entry, which keeps the memory the map wastes
// while it grows small, and an update writes the entry in place.
const (
	firstChunkBits = 3
	maxChunkBits   = 10
	maxChunk       = 1 << maxChunkBits
)

// chunkLen returns the number of entries of chunk i: 8, 16, ..., 1024, 1024...
func chunkLen(i int) int {
	return 1 << min(firstChunkBits+i, maxChunkBits)
}

// shard is a part of a table with a lock of its own, padded so that two
// shards' locks do not share a cache line.
type shard[K comparable, T window.Counter, W counts[T]] struct {
	mu        sync.Mutex
	index     map[K]uint32 // slot of each caller: chunk<<maxChunkBits | offset
	chunks    [][]entry[T, W]
	free      []uint32 // slots given back, to reuse first
	next      int      // entries handed out in the last chunk
	peak      int      // the largest len(index) since the shard was compacted
	lastSweep int64    // when a full shard last swept itself
	// sweepFrom is a time before which a sweep of the shard finds
	// nothing: the earliest expiry of an entry, or end of a mark, that
	// the last sweep left, or a mark's end set since. A full shard on a
	// fast clock (a replayed log) sweeps only when something can go.
	sweepFrom int64
	// blocked marks the callers whose last decision was refused or left a
	// limit with no room, until when that may last (at most the period of
	// the limit): they have the most at stake, and are evicted last. nil
	// until a caller is marked.
	blocked map[K]int64
	_       [8]byte
}

// mark records the decision just made for k at now: whether it was allowed,
// and until when some limit has no room (0 if every limit has room).
func (sh *shard[K, T, W]) mark(k K, until int64) {
	if until == 0 {
		if len(sh.blocked) > 0 {
			delete(sh.blocked, k)
		}
		return
	}
	if sh.blocked == nil {
		sh.blocked = make(map[K]int64)
	}
	sh.blocked[k] = until
	sh.sweepFrom = min(sh.sweepFrom, until)
}

// isBlocked reports whether k is marked blocked at now.
func (sh *shard[K, T, W]) isBlocked(k K, now int64) bool {
	until, ok := sh.blocked[k]
	return ok && now < until
}

// drop deletes the entry of k, at slot, and its mark.
func (sh *shard[K, T, W]) drop(k K, slot uint32) {
	delete(sh.index, k)
	if len(sh.blocked) > 0 {
		delete(sh.blocked, k)
	}
	sh.free = append(sh.free, slot)
}

// evictOne drops one live entry of the shard: an unmarked one (or one whose
// mark has passed), or, if marked, any. It reports whether it dropped one.
func (sh *shard[K, T, W]) evictOne(now int64, marked bool) bool {
	if !marked && len(sh.blocked) >= len(sh.index) {
		// Perhaps only marked entries: do not scan for what may not be
		// there (marks that have passed are found by the sweep).
		return false
	}
	for k, slot := range sh.index {
		if marked || !sh.isBlocked(k, now) {
			sh.drop(k, slot)
			return true
		}
	}
	return false
}

func (sh *shard[K, T, W]) at(slot uint32) *entry[T, W] {
	return &sh.chunks[slot>>maxChunkBits][slot&(maxChunk-1)]
}

// alloc returns a slot for a new entry, zeroed.
func (sh *shard[K, T, W]) alloc() uint32 {
	if n := len(sh.free); n > 0 {
		slot := sh.free[n-1]
		sh.free = sh.free[:n-1]
		*sh.at(slot) = entry[T, W]{}
		return slot
	}
	last := len(sh.chunks) - 1
	if last < 0 || sh.next == len(sh.chunks[last]) {
		sh.chunks = append(sh.chunks, make([]entry[T, W], chunkLen(len(sh.chunks))))
		last++
		sh.next = 0
	}
	sh.next++
	return uint32(last)<<maxChunkBits | uint32(sh.next-1)
}

// genericTable holds the entries of one scope and kind of caller.
type genericTable[K comparable, T window.Counter, W counts[T]] struct {
	store   *Store
	key     tableKey       // the key of its requests (of either family, for anonPair)
	shapes  []window.Shape // of each window
	longest int64          // the longest period, in nanoseconds
	hash    func(K) uint64
	id      func(core.Key) K
	cursor  atomic.Uint32 // the shard the next eviction from elsewhere tries first
	shards  [shardCount]shard[K, T, W]
}

func newTable[K comparable, T window.Counter, W counts[T]](s *Store, key tableKey, periods []time.Duration, hash func(K) uint64, id func(core.Key) K) *genericTable[K, T, W] {
	t := &genericTable[K, T, W]{store: s, key: key, hash: hash, id: id}
	t.shapes = make([]window.Shape, len(periods))
	for i, p := range periods {
		t.shapes[i] = window.ShapeOf(p)
		t.longest = max(t.longest, int64(p))
	}
	for i := range t.shards {
		t.shards[i].index = make(map[K]uint32)
	}
	return t
}

// tableCounter is the Counter of a genericTable bound to limits.
type tableCounter[K comparable, T window.Counter, W counts[T]] struct {
	t      *genericTable[K, T, W]
	limits []core.Rate
}

func (t *genericTable[K, T, W]) bind(limits []core.Rate) core.Counter {
	return &tableCounter[K, T, W]{t: t, limits: limits}
}

// Take implements [core.Counter].
func (c *tableCounter[K, T, W]) Take(_ context.Context, key core.Key, cost int64, now time.Time) (core.Result, error) {
	var res core.Result
	req := request{key: key, limits: c.limits, cost: cost}
	c.t.take(&req, c.t.store.seen(c.t.store.nanos(now)), &res)
	return res, nil
}

// GiveBack implements [core.Counter]: see [Store].
func (c *tableCounter[K, T, W]) GiveBack(_ context.Context, key core.Key, cost int64, at int64) error {
	if cost >= 1 {
		c.t.giveBack(&request{key: key, limits: c.limits, cost: cost}, at)
	}
	return nil
}

// Reset implements [core.Counter]: see [Store.reset].
func (c *tableCounter[K, T, W]) Reset(_ context.Context, key core.Key, _ time.Time) error {
	c.t.store.reset(c.t.key, key)
	return nil
}

// take decides req, one of t's requests, at now (see Store.nanos), and
// writes the result to res, which is zero. Its callers call it statically,
// so that req and res stay on their stacks.
func (t *genericTable[K, T, W]) take(req *request, now int64, res *core.Result) {
	t.takeKey(t.id(req.key), req, now, res)
}

// takeKey is take for the caller of req with key k (t.id(req.Caller)), for
// a caller that has the key at hand.
func (t *genericTable[K, T, W]) takeKey(k K, req *request, now int64, res *core.Result) {
	sh := &t.shards[t.hash(k)%shardCount]
	var sums [core.MaxLimits]int64

	sh.mu.Lock()
	slot, found := sh.index[k]
	made := false
	if !found {
		found = t.makeRoom(sh, k, now)
		if found {
			slot = sh.index[k] // added by another decision meanwhile
		} else {
			slot = sh.alloc()
			sh.index[k] = slot
			sh.peak = max(sh.peak, len(sh.index))
			made = true
		}
	}
	e := sh.at(slot)
	last := e.last
	now, merge := window.Clock(last, now)
	if made {
		e.born = now
	}
	if merge {
		for i := range len(e.w) {
			e.w[i].Merge(t.shapes[i], now)
		}
		e.last, last = now, now
		e.born = min(e.born, now)
	}
	// A refusal writes nothing, so that the state is a function of the
	// admitted requests alone, as in Redis: the check reads the windows
	// as they will be, and only an admission advances them.
	var pos [core.MaxLimits]window.Pos
	allowed := true
	for i := range len(e.w) {
		pos[i] = t.shapes[i].PosOf(last, now)
		sums[i] = e.w[i].Live(t.shapes[i], pos[i], last, now)
		if sums[i]+req.cost > req.limits[i].Limit {
			allowed = false
		}
	}
	if allowed {
		for i := range len(e.w) {
			c := &e.w[i]
			c.Advance(t.shapes[i], pos[i], last, now)
			c.Add(t.shapes[i], pos[i], last, req.cost)
			sums[i] += req.cost
		}
		e.last, last = now, now
	}
	// A limit with no room (refused, or nothing left after this request)
	// stays so for at most its period: until then the entry is marked.
	var until int64
	for i := range len(e.w) {
		if limit := req.limits[i].Limit; sums[i] >= limit || !allowed && sums[i]+req.cost > limit {
			until = max(until, now+t.shapes[i].Period)
		}
	}
	sh.mark(k, until)
	if allowed {
		sh.mu.Unlock()
		res.Allowed, res.At = true, now
	} else {
		t.refuse(sh, e, req, pos, last, now, res) // unlocks sh
	}

	// The rest reads copies, outside the lock.
	for i := range len(t.shapes) { // one shape per window; e is not read unlocked
		r := req.limits[i]
		st := &res.Limits[i]
		st.Rate = r
		st.Remaining = max(r.Limit-sums[i], 0)
		st.Reset = window.Reset(t.shapes[i].Period, last, now, sums[i])
	}
}

// refuse writes to res, for a refused request of take, how long each limit
// makes the caller wait: it copies the caller's windows, unlocks sh, which
// take locked, and reads the copy outside the lock. An allowed request,
// the common case, makes no copy.
func (t *genericTable[K, T, W]) refuse(sh *shard[K, T, W], e *entry[T, W], req *request, pos [core.MaxLimits]window.Pos, last, now int64, res *core.Result) {
	w := e.w
	sh.mu.Unlock()
	for i := range len(w) {
		c := &w[i]
		c.Advance(t.shapes[i], pos[i], last, now)
		res.Limits[i].RetryAfter = c.Wait(t.shapes[i], pos[i], last, now, req.limits[i].Limit, req.cost)
	}
}

// giveBack takes req.cost units out of the buckets of time at (as
// Store.nanos reads it) of req's caller, one of t's requests: see
// [Store.GiveBack].
func (t *genericTable[K, T, W]) giveBack(req *request, at int64) {
	k := t.id(req.key)
	sh := &t.shards[t.hash(k)%shardCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	slot, found := sh.index[k]
	if !found {
		return // expired, swept or evicted: nothing counts any more
	}
	e := sh.at(slot)
	if at > e.last {
		// The clock stepped back since, and the counts were moved to a
		// time before at (window.Clock): its bucket is unknown, and the
		// units stay counted, the safe side.
		return
	}
	if at < e.born {
		// The request was counted on an entry that was dropped since
		// (evicted, swept or reset): this one started afresh without it,
		// and gives nothing back for it.
		return
	}
	for i := range len(e.w) {
		e.w[i].Remove(t.shapes[i], e.last, at/t.shapes[i].Width, req.cost)
	}
}

// makeRoom makes room for the new entry of k, in sh (locked), when the
// store holds MaxEntries entries: it drops expired entries of sh (at most one
// such sweep of a shard per second, so a flood of new callers stays cheap),
// else evicts an unmarked entry of sh, else one of the store's (unlocking sh
// meanwhile; see Store.evict). It takes the store's count for the new entry,
// and reports true, taking nothing, if another decision added k while sh was
// unlocked.
func (t *genericTable[K, T, W]) makeRoom(sh *shard[K, T, W], k K, now int64) bool {
	s := t.store
	for tries := 0; !s.reserve(); tries++ {
		if now >= sh.sweepFrom && now-sh.lastSweep >= int64(time.Second) {
			sh.lastSweep = now
			if t.sweepShard(sh, now) > 0 {
				continue
			}
		}
		if sh.evictOne(now, false) {
			s.evicted()
			continue
		}
		sh.mu.Unlock()
		ok := s.evict(now)
		sh.mu.Lock()
		if _, found := sh.index[k]; found {
			return true
		}
		if !ok || tries > 16 {
			// Nothing to evict: the count is held by entries being added
			// right now. Go over the bound by this one.
			s.entries.Add(1)
			return false
		}
	}
	return false
}

// evict drops one entry of the table, trying its shards from the cursor on:
// an unmarked one, or if marked, any. It reports whether it dropped one.
func (t *genericTable[K, T, W]) evict(now int64, marked bool) bool {
	start := t.cursor.Add(1)
	for i := range uint32(shardCount) {
		sh := &t.shards[(start+i)%shardCount]
		sh.mu.Lock()
		ok := len(sh.index) > 0 && sh.evictOne(now, marked)
		sh.mu.Unlock()
		if ok {
			t.store.evicted()
			return true
		}
	}
	return false
}

// expiry returns when an entry whose last admitted request was at last is
// certainly empty.
func (t *genericTable[K, T, W]) expiry(last int64) int64 {
	return window.Expiry(t.longest, last)
}

func (t *genericTable[K, T, W]) sweep(now int64) int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += t.sweepShard(sh, now)
		sh.mu.Unlock()
	}
	return n
}

// sweepShard drops expired entries, and compacts a shard that has shrunk to
// a quarter of its peak so that its memory goes back to the runtime (Go maps
// keep their memory after deletes).
func (t *genericTable[K, T, W]) sweepShard(sh *shard[K, T, W], now int64) int {
	n := 0
	// Entries added after now expire after every entry left here, so the
	// earliest expiry left is when the next sweep can find something.
	next := t.expiry(now)
	for k, slot := range sh.index {
		if e := t.expiry(sh.at(slot).last); now >= e {
			sh.drop(k, slot)
			n++
		} else {
			next = min(next, e)
		}
	}
	t.store.entries.Add(int64(-n))
	for k, until := range sh.blocked {
		if now >= until {
			delete(sh.blocked, k)
		} else {
			next = min(next, until)
		}
	}
	sh.sweepFrom = next
	if sh.peak >= 64 && len(sh.index) <= sh.peak/4 {
		index, chunks := sh.index, sh.chunks
		sh.index = make(map[K]uint32, len(index))
		sh.chunks, sh.free, sh.next = nil, nil, 0
		for k, slot := range index {
			s := sh.alloc()
			*sh.at(s) = chunks[slot>>maxChunkBits][slot&(maxChunk-1)]
			sh.index[k] = s
		}
		sh.peak = len(sh.index)
	}
	return n
}

func (t *genericTable[K, T, W]) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.index)
		sh.mu.Unlock()
	}
	return n
}
