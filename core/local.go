package core

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds deciding in the process's memory: a request whose store
// answered late (ErrLate), or failed in a scope that fails local
// (FailLocal), and the carrying of what was so counted into the store
// (ADR 0007).

// localShards is the number of locks of a localView.
const localShards = 32

// localEntries is the most callers a localView keeps, per scope and kind
// of caller (and plan): beyond, it forgets one to make room, an expired
// one if it finds one, and one with nothing to carry before one with.
const localEntries = 1 << 16

// carryTimeout bounds each carrying of a caller's local units into the
// store in the background.
const carryTimeout = 5 * time.Second

// A localView is what the process knows of the callers of one bound
// Counter: what the store last said each had used, and what the process
// decided itself since. It is fed by every answer of the store, so that a
// decision made locally knows what was counted before it.
type localView struct {
	rates    []Rate
	shortest int   // the index in rates of the shortest period
	share    int64 // the limits are divided by it when the store failed (Config.Processes)
	shards   [localShards]localShard
	// owing is how many entries hold units to carry into the store;
	// carrying is set while a goroutine carries them.
	owing    atomic.Int64
	carrying atomic.Bool
}

type localShard struct {
	mu sync.Mutex
	m  map[Key]*localEntry
	_  [40]byte
}

// localEntry is one caller's state in a localView, per limit i: seen[i],
// the units the store said were used at its last answer; local[i], the
// units decided here since; until[i] (Unix nanoseconds), when both are
// certainly out of the window. owed is what was decided here while the
// store failed, to carry into it; pending, what was decided here on a late
// answer whose call was sent, which the store counts if it runs it.
type localEntry struct {
	seen, local, until [MaxLimits]int64
	owed, pending      int64
}

// newLocal returns the view of the callers of a scope with mode, counted
// with rates on cfg's store: for a store that reports itself shared (the
// Redis store's Shared() is true), which may answer late, and for a store
// that does not say, in a scope that fails local. A store that reports
// itself not shared (memstore) never fails: it gets no view, and its path
// is unchanged.
func newLocal(cfg *Config, mode FailMode, rates []Rate) *localView {
	s, ok := cfg.Store.(interface{ Shared() bool })
	if ok && !s.Shared() || !ok && mode != FailLocal {
		return nil
	}
	return newLocalView(rates, cfg.Processes)
}

func newLocalView(rates []Rate, share int) *localView {
	v := &localView{rates: rates, share: max(int64(share), 1)}
	for i, r := range rates {
		if r.Period < rates[v.shortest].Period {
			v.shortest = i
		}
	}
	for i := range v.shards {
		v.shards[i].m = make(map[Key]*localEntry)
	}
	return v
}

func (v *localView) shard(k Key) *localShard {
	h := uint32(2166136261)
	for _, b := range k.addr {
		h = (h ^ uint32(b)) * 16777619
	}
	for i := 0; i < len(k.user); i++ {
		h = (h ^ uint32(k.user[i])) * 16777619
	}
	return &v.shards[h%localShards]
}

// get returns k's entry in sh (locked), with the windows that ended by now
// cleared, adding it (and making room for it) if needed.
func (v *localView) get(sh *localShard, k Key, now int64) *localEntry {
	e := sh.m[k]
	if e == nil {
		if len(sh.m) >= localEntries/localShards {
			v.evict(sh, now)
		}
		e = &localEntry{}
		sh.m[k] = e
		return e
	}
	for i := range v.rates {
		if e.until[i] <= now {
			e.seen[i], e.local[i] = 0, 0
		}
	}
	e.pending = min(e.pending, slices.Min(e.local[:len(v.rates)]))
	return e
}

// evict forgets one entry of sh (locked): of the first few it looks at,
// an expired one, else one with nothing owed, else the first.
func (v *localView) evict(sh *localShard, now int64) {
	var first, free Key
	var haveFirst, haveFree bool
	looked := 0
	for k, e := range sh.m {
		if !haveFirst {
			first, haveFirst = k, true
		}
		if e.owed == 0 {
			expired := true
			for i := range v.rates {
				expired = expired && e.until[i] <= now
			}
			if expired {
				delete(sh.m, k)
				return
			}
			if !haveFree {
				free, haveFree = k, true
			}
		}
		if looked++; looked == 8 {
			break
		}
	}
	switch {
	case haveFree:
		delete(sh.m, free)
	case haveFirst:
		if sh.m[first].owed > 0 {
			v.owing.Add(-1)
		}
		delete(sh.m, first)
	}
}

// note records the store's answer res to a request of k at now, of cost.
// It reports whether res allowed a request that what was decided here
// since the store's last answer leaves no room for: a late decision whose
// call the store has not run yet. The caller then refuses the request and
// gives it back to the store; note has written the refusal to res, and
// counted the request out of what the store said.
func (v *localView) note(k Key, cost int64, res *Result, now time.Time) bool {
	t := now.UnixNano()
	sh := v.shard(k)
	sh.mu.Lock()
	e := v.get(sh, k, t)
	if e.pending > 0 {
		// The store's count grew by more than this request: late calls
		// decided here have run there. They are counted there now, and no
		// longer here as well (another process's requests may be taken
		// for them: the view then counts less, by at most pending).
		grew := e.pending
		for i, r := range v.rates {
			g := max(r.Limit-res.Limits[i].Remaining, 0) - e.seen[i]
			if res.Allowed {
				g -= cost
			}
			grew = min(grew, g)
		}
		if grew > 0 {
			e.pending -= grew
			for i := range v.rates {
				e.local[i] = max(e.local[i]-grew, 0)
			}
		}
	}
	over := false
	for i, r := range v.rates {
		st := &res.Limits[i]
		e.seen[i] = max(r.Limit-st.Remaining, 0)
		end := t + int64(st.Reset)
		if e.local[i] == 0 {
			e.until[i] = end
			continue
		}
		e.until[i] = max(e.until[i], end)
		over = over || res.Allowed && e.seen[i]+e.local[i] > r.Limit
	}
	if over {
		res.Allowed, res.At = false, 0
		for i, r := range v.rates {
			st := &res.Limits[i]
			e.seen[i] = max(e.seen[i]-cost, 0)
			st.Remaining = max(r.Limit-e.seen[i]-e.local[i], 0)
			st.Reset = max(time.Duration(e.until[i]-t), 0)
			if e.seen[i]+e.local[i]+cost > r.Limit {
				st.RetryAfter = max(st.Reset, time.Nanosecond)
			}
		}
	}
	sh.mu.Unlock()
	return over
}

// decide decides a request of k at now in memory, and writes its result
// to res, which is zero: allowed if every limit has room for cost after
// what the store last said and what was decided here since, and, when
// the store failed (down), if cost fits the limit divided by the share
// of this process too. An allowed request is counted here until its
// windows end, and owed to the store (carried into it) when owe says
// that the store did not count it.
func (v *localView) decide(k Key, cost int64, now time.Time, down, owe bool, res *Result) {
	t := now.UnixNano()
	share := int64(1)
	if down {
		share = v.share
	}
	sh := v.shard(k)
	sh.mu.Lock()
	e := v.get(sh, k, t)
	allowed := true
	for i, r := range v.rates {
		if e.seen[i]+e.local[i]+cost > r.Limit || e.local[i]+cost > r.Limit/share {
			allowed = false
		}
	}
	if allowed {
		for i, r := range v.rates {
			e.local[i] += cost
			e.until[i] = max(e.until[i], t+int64(r.Period))
		}
		if owe {
			if e.owed == 0 {
				v.owing.Add(1)
			}
			e.owed += cost
		} else {
			e.pending += cost
		}
		res.Allowed = true
	}
	c := *e // read outside the lock
	sh.mu.Unlock()
	e = &c
	for i, r := range v.rates {
		st := &res.Limits[i]
		st.Rate = r
		st.Remaining = max(min(r.Limit-e.seen[i]-e.local[i], r.Limit/share-e.local[i]), 0)
		st.Reset = max(time.Duration(e.until[i]-t), 0)
		if !allowed && (e.seen[i]+e.local[i]+cost > r.Limit || e.local[i]+cost > r.Limit/share) {
			st.RetryAfter = max(st.Reset, time.Nanosecond)
		}
	}
}

// takeOwed returns the units owed for k, and clears them: none when the
// window of the shortest period that held them has ended by now, since
// then they no longer count there.
func (v *localView) takeOwed(k Key, now time.Time) int64 {
	t := now.UnixNano()
	sh := v.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[k]
	if e == nil || e.owed == 0 {
		return 0
	}
	n := e.owed
	e.owed = 0
	v.owing.Add(-1)
	if e.until[v.shortest] <= t {
		n = 0
	}
	return n
}

// owe gives k back n units to carry, after a carrying that failed.
func (v *localView) owe(k Key, n int64) {
	sh := v.shard(k)
	sh.mu.Lock()
	if e := sh.m[k]; e != nil {
		if e.owed == 0 {
			v.owing.Add(1)
		}
		e.owed += n
	}
	sh.mu.Unlock()
}

// carried records that n units counted here for k are now in the store,
// which says so in res: they are no longer counted here as well.
func (v *localView) carried(k Key, n int64, res *Result, now time.Time) {
	t := now.UnixNano()
	sh := v.shard(k)
	sh.mu.Lock()
	e := v.get(sh, k, t)
	for i, r := range v.rates {
		e.local[i] = max(e.local[i]-n, 0)
		e.seen[i] = max(r.Limit-res.Limits[i].Remaining, 0)
		e.until[i] = max(e.until[i], t+int64(res.Limits[i].Reset))
	}
	sh.mu.Unlock()
}

// owedKeys returns the callers that have units to carry.
func (v *localView) owedKeys() []Key {
	var keys []Key
	for i := range v.shards {
		sh := &v.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if e.owed > 0 {
				keys = append(keys, k)
			}
		}
		sh.mu.Unlock()
	}
	return keys
}

// forget drops what the view knows of k: [Limiter.Reset].
func (v *localView) forget(k Key) {
	sh := v.shard(k)
	sh.mu.Lock()
	if e := sh.m[k]; e != nil {
		if e.owed > 0 {
			v.owing.Add(-1)
		}
		delete(sh.m, k)
	}
	sh.mu.Unlock()
}

// decideLocally fills d, whose store failed with err, with the decision
// made in memory (see localView.decide): down says that the store failed,
// rather than answered late. A request the store failed on is carried
// into it once it answers, and so is a late one that was never sent (its
// error wraps [ErrNotSent]); a late one that was sent is not, since the
// store may count it when it gets to it.
func (l *Limiter) decideLocally(ctx context.Context, now time.Time, s *scopeLimits, k *kindLimits, key Key, d *Decision, err error, down bool) {
	l.storeFailed(ctx, now, s.name, err, OutcomeLocal)
	d.res = Result{}
	k.local.decide(key, d.Cost, now, down, down || errors.Is(err, ErrNotSent), &d.res)
	d.Outcome = OutcomeLocal
	d.StoreErr = err
}

// carry carries the units counted in memory for key, while the store was
// down, into the store, now that it answers: as one Take of those units,
// or of what the store has room for when it refuses them (the caller is
// then over its limit for the rest of the window, as it was locally).
func (l *Limiter) carry(ctx context.Context, k *kindLimits, key Key, now time.Time) {
	n := k.local.takeOwed(key, now)
	if n == 0 {
		return
	}
	res, err := k.counter.Take(ctx, key, n, now)
	if err == nil && !res.Allowed {
		room := n
		for i := range k.rates {
			room = min(room, res.Limits[i].Remaining)
		}
		if room > 0 {
			res, err = k.counter.Take(ctx, key, room, now)
		}
	}
	if err != nil {
		k.local.owe(key, n)
		return
	}
	k.local.carried(key, n, &res, now)
}

// carryAll carries, in the background, the units of every caller of k
// counted in memory while the store was down; at most one such goroutine
// runs per view.
func (l *Limiter) carryAll(k *kindLimits) {
	if !k.local.carrying.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer k.local.carrying.Store(false)
		for _, key := range k.local.owedKeys() {
			ctx, cancel := context.WithTimeout(context.Background(), carryTimeout)
			l.carry(ctx, k, key, l.now())
			cancel()
		}
	}()
}
