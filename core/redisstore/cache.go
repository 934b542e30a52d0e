package redisstore

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/window"
)

// cacheShards is the number of independently locked parts of the over-limit
// cache.
const cacheShards = 16

// cacheKey names one caller's counts and the limits enforced on them: a
// denial under some limits says nothing about higher ones.
type cacheKey struct {
	key    string
	limits [core.MaxLimits]int64
}

// denial is a remembered answer: Redis refused a request of cost cost at at
// (µs since the Unix epoch, request clock) with res, and at least one limit
// had nothing left.
//
// While some limit has nothing left, no process can admit anything for the
// caller, so its counts do not change: only time passes. Until until, when a
// request of cost 1 would fit again, the answer to a request of the same
// cost is therefore res with its durations counted down: the same refusal,
// the same Retry-After and Reset to the microsecond, and a Remaining that can
// only be lower than the true one (a bucket may have left meanwhile). For
// another cost the remembered answer says nothing, and after until the
// counts may have changed.
type denial struct {
	at, until, cost int64
	res             core.Result
}

// denials is the over-limit cache: a bounded, sharded map of denials.
type denials struct {
	seed   maphash.Seed
	max    int   // entries per shard
	maxAge int64 // Config.CacheMaxAge in µs; 0: no bound
	shards [cacheShards]denialShard
}

type denialShard struct {
	mu        sync.Mutex
	m         map[cacheKey]denial
	lastSweep int64
	// gen counts the give-backs of the shard's keys (forget): a denial
	// whose Take read another gen before it asked Redis may predate a
	// give-back, and is not remembered.
	gen atomic.Uint64
	_   [32]byte // keep two shards' locks off one cache line
}

// gen returns the give-back count of k's shard: a Take reads it before it
// asks Redis and passes it to remember.
func (d *denials) gen(k *cacheKey) uint64 {
	return d.shard(k).gen.Load()
}

func newDenials(size int) *denials {
	d := &denials{seed: maphash.MakeSeed(), max: max(1, (size+cacheShards-1)/cacheShards)}
	for i := range d.shards {
		d.shards[i].m = make(map[cacheKey]denial)
	}
	return d
}

func (d *denials) shard(k *cacheKey) *denialShard {
	return &d.shards[maphash.String(d.seed, k.key)%cacheShards]
}

// stepBack is window.StepBack in microseconds: a request clock that reads
// less than a remembered denial's time by more is not trusted with it.
const stepBack = window.StepBack / int64(time.Microsecond)

// lookup returns the answer Redis would give, at now, to a request of cost,
// if the cache knows it: the remembered denial of the same cost, with its
// durations counted down to now.
func (d *denials) lookup(k *cacheKey, now, cost int64) (core.Result, bool) {
	sh := d.shard(k)
	sh.mu.Lock()
	e, ok := sh.m[*k]
	if ok && (now >= e.until || now < e.at-stepBack) {
		// The counts may have changed, or the clock stepped back too far
		// for the denial to say anything.
		delete(sh.m, *k)
		ok = false
	}
	sh.mu.Unlock()
	// Before the denial's time (a clock read out of order), the wait is
	// longer than the remembered one by an amount the cache cannot know:
	// ask Redis.
	if !ok || cost != e.cost || now < e.at {
		return core.Result{}, false
	}
	res := e.res
	elapsed := time.Duration(now-e.at) * time.Microsecond
	for i := range res.Limits {
		l := &res.Limits[i]
		l.Reset = max(l.Reset-elapsed, 0)
		l.RetryAfter = max(l.RetryAfter-elapsed, 0)
	}
	return res, true
}

// remember records that Redis refused a request of cost at now with res,
// and that a request of cost 1 would wait one (µs) for room: the caller's
// counts are frozen until then, and the denial is remembered until then
// or for maxAge, whichever is shorter. gen is what [denials.gen] read
// before the request was sent: if a give-back of the shard came since, the
// refusal may predate it, and is not remembered.
func (d *denials) remember(k *cacheKey, now, cost, one int64, res *core.Result, gen uint64) {
	e := denial{at: now, until: now + one, cost: cost, res: *res}
	if d.maxAge > 0 {
		e.until = min(e.until, now+d.maxAge)
	}
	sh := d.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen.Load() != gen {
		return
	}
	if _, ok := sh.m[*k]; !ok && len(sh.m) >= d.max {
		sh.makeRoom(now)
	}
	sh.m[*k] = e
}

// makeRoom frees an entry of a full shard: expired ones first (at most one
// such sweep per second of request time, so that a flood of new callers
// stays cheap), else an arbitrary one, which only costs a call to Redis.
func (sh *denialShard) makeRoom(now int64) {
	if now-sh.lastSweep >= int64(time.Second/time.Microsecond) {
		sh.lastSweep = now
		n := len(sh.m)
		for k, e := range sh.m {
			if now >= e.until {
				delete(sh.m, k)
			}
		}
		if len(sh.m) < n {
			return
		}
	}
	for k := range sh.m {
		delete(sh.m, k)
		return
	}
}

func (d *denials) len() int {
	n := 0
	for i := range d.shards {
		sh := &d.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// forget drops the denial remembered for k, if any, once a give-back of k
// has reached Redis: the caller's counts changed, so the denial may no
// longer hold; and it moves the shard's gen on, so that a refusal Redis
// gave before the give-back and answered after it is not remembered. (A
// give-back made by another process cannot reach this cache: its denials
// keep refusing until they end, at most until a request of cost 1 would
// have fit without the give-back; the strict side.)
func (d *denials) forget(k *cacheKey) {
	sh := d.shard(k)
	sh.gen.Add(1)
	sh.mu.Lock()
	delete(sh.m, *k)
	sh.mu.Unlock()
}
