package memstore

import (
	"sync"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/window"
)

// counts is the set of window arrays an entry can hold, one per limit. An
// entry is stored by value in its map, so a caller costs no allocation of
// its own.
type counts interface {
	[1]window.Counts | [2]window.Counts | [3]window.Counts | [4]window.Counts
}

// entry is the state of one caller in one scope: the time of its last
// request (nanoseconds since the Unix epoch) and one window per limit.
type entry[W counts] struct {
	last int64
	w    W
}

// shard is a part of a table with a lock of its own, padded so that two
// shards' locks do not share a cache line.
type shard[K comparable, W counts] struct {
	mu        sync.Mutex
	m         map[K]entry[W]
	grown     int   // the largest len(m) since m was made
	lastSweep int64 // when a full shard last swept itself
	_         [32]byte
}

// genericTable holds the entries of one scope and kind of caller.
type genericTable[K comparable, W counts] struct {
	store  *Store
	widths []int64 // bucket width of each window, in nanoseconds
	hash   func(K) uint64
	id     func(*core.Caller) K
	shards [shardCount]shard[K, W]
}

func newTable[K comparable, W counts](s *Store, widths []int64, hash func(K) uint64, id func(*core.Caller) K) *genericTable[K, W] {
	t := &genericTable[K, W]{store: s, widths: widths, hash: hash, id: id}
	for i := range t.shards {
		t.shards[i].m = make(map[K]entry[W])
	}
	return t
}

func (t *genericTable[K, W]) take(req *core.Request) core.Result {
	k := t.id(&req.Caller)
	sh := &t.shards[t.hash(k)%shardCount]
	now := max(req.Now.UnixNano(), 0)
	var res core.Result

	sh.mu.Lock()
	e, found := sh.m[k]
	if !found && len(sh.m) >= t.store.maxPerShard {
		t.makeRoom(sh, now)
	}
	// A clock that steps back is read as standing still, so that counts
	// are never dropped early.
	now = max(now, e.last)
	allowed := true
	for i := range len(e.w) {
		r := req.Limits[i]
		width := t.widths[i]
		c := &e.w[i]
		c.Advance(width, e.last, now)
		wait, fits := c.Wait(width, now, r.Limit, req.Cost)
		if !fits {
			wait = c.Reset(width, now) + time.Duration(width)
		}
		if wait > 0 || !fits {
			allowed = false
		}
		res.Limits[i].RetryAfter = wait
	}
	for i := range len(e.w) {
		r := req.Limits[i]
		width := t.widths[i]
		c := &e.w[i]
		if allowed {
			c.Add(width, now, req.Cost)
		}
		st := &res.Limits[i]
		st.Rate = r
		st.Remaining = max(r.Limit-c.Sum(), 0)
		st.Reset = c.Reset(width, now)
	}
	e.last = now
	sh.m[k] = e
	sh.grown = max(sh.grown, len(sh.m))
	sh.mu.Unlock()

	res.Allowed = allowed
	return res
}

// makeRoom frees an entry in a full shard: expired entries first (at most
// one such sweep per second, so a flood of new callers stays cheap), then an
// arbitrary live one.
func (t *genericTable[K, W]) makeRoom(sh *shard[K, W], now int64) {
	if now-sh.lastSweep >= int64(time.Second) {
		sh.lastSweep = now
		if t.sweepShard(sh, now) > 0 {
			return
		}
	}
	for k := range sh.m {
		delete(sh.m, k)
		t.store.evictions.Add(1)
		return
	}
}

// expiry returns when an entry last updated at last is certainly empty.
func (t *genericTable[K, W]) expiry(last int64) int64 {
	var at int64
	for _, w := range t.widths {
		at = max(at, window.Expiry(w, last))
	}
	return at
}

func (t *genericTable[K, W]) sweep(now int64) int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += t.sweepShard(sh, now)
		sh.mu.Unlock()
	}
	return n
}

// sweepShard drops expired entries and shrinks a map that emptied.
func (t *genericTable[K, W]) sweepShard(sh *shard[K, W], now int64) int {
	n := 0
	for k, e := range sh.m {
		if now >= t.expiry(e.last) {
			delete(sh.m, k)
			n++
		}
	}
	// Go maps keep their memory after deletes: copy one that has shrunk
	// to a quarter of its peak into a map of the right size.
	if sh.grown >= 64 && len(sh.m) <= sh.grown/4 {
		m := make(map[K]entry[W], len(sh.m))
		for k, e := range sh.m {
			m[k] = e
		}
		sh.m = m
		sh.grown = len(m)
	}
	return n
}

func (t *genericTable[K, W]) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
