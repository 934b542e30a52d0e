// Package memstore keeps ratescope's counts in the memory of one process.
//
// Use it for development and for an API served by a single process: counts
// are not shared between processes, so with N processes each caller gets up
// to N times its limits (use the Redis store there). It counts with the same
// algorithm as every ratescope store and passes the same conformance suite.
//
// # Memory
//
// A caller costs one small entry per scope (docs/reference.md gives its
// size), found through a map keyed by the IPv4 address, the IPv6 network or
// the user id (a digest for a long id, so that no id makes a large entry).
// An entry is dropped once all its windows are empty, one longest period
// after its last admitted request; a background sweep, every
// Config.SweepInterval, removes such entries and gives the memory of a map
// that emptied back to the runtime. The sweep reads the requests' clock
// (see Config.Now), so a limiter on a clock of its own never loses live
// counts to it.
//
// # A bound for the whole store
//
// Config.MaxEntries bounds the entries of the whole store, whatever the
// number of scopes, kinds of caller and address families. When a new caller
// arrives at a full store, room is made in this order:
//
//  1. expired entries of its shard are dropped (one such sweep of a shard
//     per second at most, so a flood of new callers stays cheap);
//  2. an unmarked live entry is evicted, of its shard if it has one, else
//     of any table of the store: its caller starts afresh, with its whole
//     allowance, which costs little, since it had room;
//  3. only when every entry is marked, a marked one is evicted.
//
// An entry is marked (blocked) when its last decision was refused, or left
// a limit with no room, for at most that limit's period. Those are the
// callers with the most at stake, the ones a flood of new callers would
// otherwise set free: a refused caller is never served before its
// Retry-After because of an eviction while any entry with less at stake is
// left. Evictions are counted in [Store.Evictions]. The bound can be passed
// by the decisions in progress at one moment, never by more.
//
// Balances ([balance.Store]) are kept apart, each balance scope and kind
// of caller bounded by Config.MaxEntries on its own; a full shard evicts a
// balance below the warning threshold before any other, so that a flood of
// new callers does not set a dropped caller free.
//
// # Time
//
// A request's time is read on the monotonic clock when it has a monotonic
// reading, as the times of time.Now do: a step of the wall clock (NTP, an
// operator) moves no count, and no caller is locked out by a clock that
// jumped ahead for one request. A time without one (from an injected clock)
// is read on the wall clock, and a step back is handled as in every store:
// up to a second, as the clock standing still; beyond, by taking the
// caller's counts as made at the new time, so that it waits at most a
// period (docs/adr/0001).
//
// # Concurrency
//
// A Store is safe for concurrent use. Entries are spread over shards, each
// with its own lock, so only callers that share a shard wait for each
// other; there is no global lock on the request path.
package memstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/window"
)

// Config configures a [Store]. Zero fields take the defaults stated on each.
type Config struct {
	// MaxEntries is the most entries (one per caller and scope) the whole
	// store keeps, over all its scopes (see A bound for the whole store).
	// Default: 1,048,576, about 120 MiB of IPv4 callers with two limits.
	MaxEntries int
	// SweepInterval is how often the background sweep drops expired
	// entries. Default: one minute. A negative value disables the
	// background sweep; call [Store.Sweep] yourself.
	SweepInterval time.Duration
	// Now, when set, is the clock of the background sweep; give it the
	// clock of the requests (core.Config.Now). Default: nil, the sweep
	// follows the requests' own clock: it drops what has expired at the
	// time of the latest request the store decided, so that the one clock
	// that rules the counts also rules their expiry, whatever clock the
	// limiter reads (a fake one, or one of its own). Take always uses the
	// time in each request.
	Now func() time.Time
}

// shardCount is the number of shards of each table: enough that two cores
// rarely meet on one lock, few enough to stay small for small scopes.
const shardCount = 64

// Store is an in-memory [core.Store]. Build it with [New] and stop its
// background sweep with [Store.Close].
type Store struct {
	maxEntries int64
	entries    atomic.Int64 // entries held, in all tables
	cursor     atomic.Uint32
	list       atomic.Pointer[[]table] // every table, for evict
	now        func() time.Time
	base       time.Time // taken at New, with a monotonic reading
	baseNano   int64     // base's wall time, in nanoseconds since the Unix epoch
	tables     sync.Map  // tableKey -> *keyedTable
	balances   sync.Map  // balanceKey -> *balanceTable (balance.go)
	perShard   int       // the entries of one shard of a balance table, at most
	// latest and latestBalance are the time of the latest request decided,
	// of windows (as Store.nanos reads it) and of balances (Unix
	// nanoseconds), to within a second: the background sweep's time when
	// Config.Now is nil.
	latest        atomic.Int64
	latestBalance atomic.Int64
	mu            sync.Mutex
	evictions     atomic.Int64
	stop          chan struct{}
	done          chan struct{}
	closeOnce     sync.Once
}

// tableKey names the table of one scope and kind of caller. Periods tells
// the windows apart if two limiters with different rates share the store.
type tableKey struct {
	scope   string
	kind    core.Kind
	wide    bool // some limit needs 32-bit counters
	periods [core.MaxLimits]time.Duration
}

// table is what a Store needs of a table, whatever its key and entry types.
type table interface {
	// bind returns the table's Counter for limits: it decides a request
	// with static calls only, so that nothing of the request or its result
	// is copied more than the Counter contract copies it.
	bind(limits []core.Rate) core.Counter
	sweep(now int64) int
	len() int
	// evict drops one entry, unmarked (or whose mark has passed) unless
	// marked, and reports whether it found one.
	evict(now int64, marked bool) bool
	// reset drops the entry of a caller (reset.go).
	reset(key core.Key)
}

// request is one decision asked of a table: the caller's key, the limits
// of the Counter it came through, and its cost.
type request struct {
	key    core.Key
	limits []core.Rate
	cost   int64
}

// reserve takes the count of one new entry if the store has room for it.
func (s *Store) reserve() bool {
	for {
		n := s.entries.Load()
		if n >= s.maxEntries {
			return false
		}
		if s.entries.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// evicted counts an entry evicted to make room.
func (s *Store) evicted() {
	s.entries.Add(-1)
	s.evictions.Add(1)
}

// evict drops one entry of any table, an unmarked one if there is any, and
// reports whether it dropped one. It visits the tables from a cursor that
// moves on at each call, so that no table pays for all the others.
func (s *Store) evict(now int64) bool {
	list := s.list.Load()
	if list == nil {
		return false
	}
	tables := *list
	start := int(s.cursor.Add(1))
	for _, marked := range []bool{false, true} {
		for i := range tables {
			if tables[(start+i)%len(tables)].evict(now, marked) {
				return true
			}
		}
	}
	return false
}

// New returns a Store for cfg and starts its background sweep.
func New(cfg Config) *Store {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 1 << 20
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = time.Minute
	}
	base := time.Now()
	s := &Store{
		maxEntries: int64(cfg.MaxEntries),
		perShard:   max(1, (cfg.MaxEntries+shardCount-1)/shardCount),
		now:        cfg.Now,
		base:       base,
		baseNano:   base.UnixNano(),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	if cfg.SweepInterval > 0 {
		go s.sweepEvery(cfg.SweepInterval)
	} else {
		close(s.done)
	}
	return s
}

func (s *Store) sweepEvery(d time.Duration) {
	defer close(s.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.now != nil {
				s.Sweep(s.now())
			} else {
				s.sweepAt(s.latest.Load(), s.latestBalance.Load())
			}
		}
	}
}

// Close stops the background sweep. The store keeps working; Close is safe
// to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// Bind implements [core.Store]: it returns the Counter of the table that
// keeps the counts of scope and kind over the periods of limits. Limits
// over the same periods share one table, whose counters are wide enough
// for the largest limits bound first (a [core.Limiter] binds the widest
// limits of a scope with plans first).
func (s *Store) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	key, ok := keyOf(scope, kind, limits)
	if !ok {
		return nil, fmt.Errorf("memstore: %d limits: want 1 to %d", len(limits), core.MaxLimits)
	}
	for i, r := range limits {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("memstore: limit %d: %w", i, err)
		}
	}
	return s.table(key, len(limits)).table.bind(slices.Clone(limits)), nil
}

// seen records now, a request's time as Store.nanos reads it, as the
// latest when it is a second or more after the latest recorded, and
// returns it. A request costs one atomic load; the latest is written about
// once a second, so that cores do not contend for it.
func (s *Store) seen(now int64) int64 {
	advance(&s.latest, now)
	return now
}

// advance sets latest to now when now is a second or more after it.
func advance(latest *atomic.Int64, now int64) {
	for {
		old := latest.Load()
		if now < old+int64(time.Second) || latest.CompareAndSwap(old, now) {
			return
		}
	}
}

// keyOf returns the key of the table that keeps the counts of scope and
// kind with those limits, or false if there are no limits or more than
// [core.MaxLimits].
func keyOf(scope string, kind core.Kind, limits []core.Rate) (tableKey, bool) {
	if len(limits) == 0 || len(limits) > core.MaxLimits {
		return tableKey{}, false
	}
	key := tableKey{scope: scope, kind: kind}
	for i, r := range limits {
		key.periods[i] = r.Period
		if !window.Narrow(r.Limit) {
			key.wide = true
		}
	}
	return key, true
}

// table returns the table of key, made for n limits if there is none yet.
//
// The counts of a narrow key with no table of its own are kept in the wide
// table of the same scope, kind and periods when there is one: a scope with
// plans (core.Scope.Plans) whose limits are wide for some plans and narrow
// for others keeps every caller's count in one table, whatever its plan.
// The Limiter asks for that table (Bind, with the widest limits) when
// it is built, before any request, and its Counter decides the narrow
// limits too. A table that exists keeps its counts: none moves to a wide
// table made later.
func (s *Store) table(key tableKey, n int) *keyedTable {
	if v, ok := s.tables.Load(key); ok {
		return v.(*keyedTable)
	}
	if !key.wide {
		if v, ok := s.tables.Load(key.widened()); ok {
			return v.(*keyedTable)
		}
	}
	return s.newTable(key, n)
}

// widened returns k with wide counters.
func (k tableKey) widened() tableKey {
	k.wide = true
	return k
}

// maxNanos is the latest time the store counts at: far beyond any real
// clock, and far enough from the int64 limit that adding a period cannot
// overflow.
const maxNanos = 1 << 62

// nanos returns the time t in nanoseconds since the Unix epoch, as the store
// counts: on the monotonic clock when t has a monotonic reading (time.Now
// gives one), so that a step of the wall clock moves no count, and on the
// wall clock otherwise (a time from an injected clock). Times before the
// epoch count as the epoch.
func (s *Store) nanos(t time.Time) int64 {
	d := int64(t.Sub(s.base)) // monotonic when both have a reading
	switch {
	case d <= -s.baseNano:
		return 0
	case d >= maxNanos-s.baseNano:
		return maxNanos
	}
	return s.baseNano + d
}

// keyedTable is a table with its key.
type keyedTable struct {
	key   tableKey
	table table
}

func (s *Store) newTable(key tableKey, n int) *keyedTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.tables.Load(key); ok {
		return v.(*keyedTable)
	}
	periods := key.periods[:n]
	var kt *keyedTable
	if key.wide {
		kt = tablesFor[uint32](s, key, periods)
	} else {
		kt = tablesFor[uint16](s, key, periods)
	}
	var list []table
	if old := s.list.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, kt.table)
	s.list.Store(&list)
	s.tables.Store(key, kt)
	return kt
}

// tablesFor returns the tables of key, with one window of counters of type
// T per period.
func tablesFor[T window.Counter](s *Store, key tableKey, periods []time.Duration) *keyedTable {
	switch len(periods) {
	case 1:
		return tableOf[T, [1]window.Counts[T]](s, key, periods)
	case 2:
		return tableOf[T, [2]window.Counts[T]](s, key, periods)
	case 3:
		return tableOf[T, [3]window.Counts[T]](s, key, periods)
	}
	return tableOf[T, [4]window.Counts[T]](s, key, periods)
}

// tableOf returns the tables of key: one for signed-in callers, or a pair
// for anonymous callers.
func tableOf[T window.Counter, W counts[T]](s *Store, key tableKey, periods []time.Duration) *keyedTable {
	if key.kind == core.User {
		return userTable[T, W](s, key, periods)
	}
	return anonTable[T, W](s, key, periods)
}

func userTable[T window.Counter, W counts[T]](s *Store, key tableKey, periods []time.Duration) *keyedTable {
	seed := maphash.MakeSeed()
	t := newTable[string, T, W](s, key, periods,
		func(k string) uint64 { return maphash.String(seed, k) },
		func(k core.Key) string { id, _ := k.User(); return id })
	return &keyedTable{key: key, table: t}
}

// anonPair keeps IPv4 callers under 4-byte keys and the others (IPv6
// networks, unknown addresses) under 16-byte keys: most anonymous traffic
// is IPv4, and the key is a large part of an entry's memory.
type anonPair[T window.Counter, W counts[T]] struct {
	v4 *genericTable[uint32, T, W]
	v6 *genericTable[[16]byte, T, W]
}

func anonTable[T window.Counter, W counts[T]](s *Store, key tableKey, periods []time.Duration) *keyedTable {
	// Callers choose their addresses, so the hash is seeded; shards only
	// spread lock contention, so a skew would cost speed, never
	// correctness.
	seed := rand.Uint64()
	a := &anonPair[T, W]{
		v4: newTable[uint32, T, W](s, key, periods,
			func(k uint32) uint64 { return mix(uint64(k) ^ seed) },
			func(k core.Key) uint32 { a, _ := k.Addr(); return v4Key(a) }),
		v6: newTable[[16]byte, T, W](s, key, periods,
			func(k [16]byte) uint64 {
				return mix(binary.LittleEndian.Uint64(k[:8]) ^ seed ^ mix(binary.LittleEndian.Uint64(k[8:])+seed))
			},
			v6Key),
	}
	return &keyedTable{key: key, table: a}
}

// v4Key returns the key of an IPv4 address, in its 16-byte form, in the
// table of IPv4 callers.
func v4Key(a [16]byte) uint32 { return binary.BigEndian.Uint32(a[12:]) }

// is4 reports whether a, in its 16-byte form, is an IPv4 address.
func is4(a [16]byte) bool {
	return a[10] == 0xff && a[11] == 0xff && binary.LittleEndian.Uint64(a[:8]) == 0 && a[8] == 0 && a[9] == 0
}

// unknownAddr is the key, in the table of the other callers, of the
// anonymous callers whose address is unknown: an IPv4-mapped address, which
// no network of that table has (IPv4 callers are in the IPv4 table, and an
// IPv4-mapped network shorter than /96 ends in zero bits).
var unknownAddr = [16]byte{10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}

// v6Key returns the key of k in the table of the callers that are not
// IPv4: its network, or unknownAddr.
func v6Key(k core.Key) [16]byte {
	if a, ok := k.Addr(); ok {
		return a
	}
	return unknownAddr
}

// pairCounter is the Counter of an anonPair bound to limits.
type pairCounter[T window.Counter, W counts[T]] struct {
	a      *anonPair[T, W]
	limits []core.Rate
}

func (a *anonPair[T, W]) bind(limits []core.Rate) core.Counter {
	return &pairCounter[T, W]{a: a, limits: limits}
}

// Take implements [core.Counter], in the table of the caller's address
// family.
func (c *pairCounter[T, W]) Take(_ context.Context, key core.Key, cost int64, now time.Time) (core.Result, error) {
	var res core.Result
	req := request{key: key, limits: c.limits, cost: cost}
	s := c.a.v4.store
	at := s.seen(s.nanos(now))
	if a, ok := key.Addr(); ok && is4(a) {
		c.a.v4.takeKey(v4Key(a), &req, at, &res) // its key at hand: no call of v4.id
	} else {
		c.a.v6.take(&req, at, &res)
	}
	return res, nil
}

// GiveBack implements [core.Counter]: see [Store].
func (c *pairCounter[T, W]) GiveBack(_ context.Context, key core.Key, cost int64, at int64) error {
	if cost < 1 {
		return nil
	}
	req := request{key: key, limits: c.limits, cost: cost}
	if a, ok := key.Addr(); ok && is4(a) {
		c.a.v4.giveBack(&req, at)
	} else {
		c.a.v6.giveBack(&req, at)
	}
	return nil
}

// Reset implements [core.Counter]: see [Store.reset].
func (c *pairCounter[T, W]) Reset(_ context.Context, key core.Key, _ time.Time) error {
	c.a.v4.store.reset(c.a.v4.key, key)
	return nil
}

func (a *anonPair[T, W]) reset(key core.Key) {
	if addr, ok := key.Addr(); ok && is4(addr) {
		a.v4.reset(key)
	} else {
		a.v6.reset(key)
	}
}

func (a *anonPair[T, W]) sweep(now int64) int { return a.v4.sweep(now) + a.v6.sweep(now) }

func (a *anonPair[T, W]) evict(now int64, marked bool) bool {
	return a.v4.evict(now, marked) || a.v6.evict(now, marked)
}

func (a *anonPair[T, W]) len() int { return a.v4.len() + a.v6.len() }

// mix scrambles the bits of x so that every bit of the result depends on
// every bit of x.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Sweep drops the entries whose windows are all empty at now, and the
// balances that read zero, and returns how many it dropped. A shard whose map has shrunk well below the size it grew
// to is copied into a smaller map, so that its memory is given back.
func (s *Store) Sweep(now time.Time) int {
	return s.sweepAt(s.nanos(now), now.UnixNano())
}

// sweepAt drops the window entries expired at now (as Store.nanos reads
// it) and the balances zero at balanceNow (Unix nanoseconds).
func (s *Store) sweepAt(now, balanceNow int64) int {
	n := 0
	s.tables.Range(func(_, v any) bool {
		n += v.(*keyedTable).table.sweep(now)
		return true
	})
	return n + s.sweepBalances(balanceNow)
}

// Len returns the number of entries the store holds.
func (s *Store) Len() int {
	n := 0
	s.tables.Range(func(_, v any) bool {
		n += v.(*keyedTable).table.len()
		return true
	})
	return n + s.lenBalances()
}

// Shared reports false: the counts belong to this process. The startup
// checks warn about it (ratescope.W602).
func (s *Store) Shared() bool { return false }

// Evictions returns how many live entries were evicted, since the store
// was built, because the store was full.
func (s *Store) Evictions() int64 {
	return s.evictions.Load()
}

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

// windows returns the number of windows of an entry with windows W.
func windows[T window.Counter, W counts[T]]() int {
	var w W
	return len(w)
}

// genericTable holds the entries of one scope and kind of caller.
type genericTable[K comparable, T window.Counter, W counts[T]] struct {
	store   *Store
	key     tableKey                     // the key of its requests (of either family, for anonPair)
	shapes  [core.MaxLimits]window.Shape // of each window, one per element of W
	longest int64                        // the longest period, in nanoseconds
	hash    func(K) uint64
	id      func(core.Key) K
	cursor  atomic.Uint32 // the shard the next eviction from elsewhere tries first
	shards  [shardCount]shard[K, T, W]
}

func newTable[K comparable, T window.Counter, W counts[T]](s *Store, key tableKey, periods []time.Duration, hash func(K) uint64, id func(core.Key) K) *genericTable[K, T, W] {
	t := &genericTable[K, T, W]{store: s, key: key, hash: hash, id: id}
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
	// The bucket of now in each window needs no entry: it is found before
	// the lock, so that two decisions for one caller wait on each other
	// for less (window.Shape.PosIn then divides nothing, most often).
	var cur [core.MaxLimits]int64
	for i := range windows[T, W]() {
		cur[i] = t.shapes[i].Bucket(now)
	}
	at := now

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
	if now != at {
		// The clock stepped back a little: now is last.
		for i := range windows[T, W]() {
			cur[i] = t.shapes[i].Bucket(now)
		}
	}
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
		pos[i] = t.shapes[i].PosIn(last, cur[i])
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
	for i := range windows[T, W]() { // e is not read unlocked
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
