package memstore

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/decay"
)

// balanceKey names the balances of one balance scope. Window tells them
// apart if two limiters with different windows share the store.
type balanceKey struct {
	scope  string
	window time.Duration
}

// balanceTable holds the balances of one balance scope: signed-in callers
// by user id, anonymous ones by network, in shards with a lock each, as
// the window tables are, and bounded as they are (Config.MaxEntries).
type balanceTable struct {
	users balanceMap[string]
	anons balanceMap[anonKey]
}

// anonKey is the key of an anonymous caller's balance: its network's
// address and whether the address is known (core.Key.Addr).
type anonKey struct {
	addr  [16]byte
	known bool
}

// anonKeyOf returns the key of c's balance.
func anonKeyOf(c core.Caller) anonKey {
	a, known := c.Key().Addr()
	return anonKey{addr: a, known: known}
}

// userKeyOf returns the key of signed-in c's balance.
func userKeyOf(c core.Caller) string {
	id, _ := c.Key().User()
	return id
}

type balanceMap[K comparable] struct {
	seed   maphash.Seed
	shards [shardCount]balanceShard[K]
}

type balanceShard[K comparable] struct {
	mu        sync.Mutex
	m         map[K]decay.State
	lastSweep int64
	_         [16]byte
}

// Charge implements [balance.Store]: the arithmetic of package
// internal/decay, under the lock of the caller's shard. It never returns
// an error.
func (s *Store) Charge(_ context.Context, req balance.Request) (balance.Result, error) {
	key := balanceKey{scope: req.Scope, window: req.Policy.Window}
	var t *balanceTable
	if v, ok := s.balances.Load(key); ok {
		t = v.(*balanceTable)
	} else {
		v, _ := s.balances.LoadOrStore(key, newBalanceTable())
		t = v.(*balanceTable)
	}
	p := policy(req.Policy)
	now := max(req.Now.UnixNano(), 0)
	advance(&s.latestBalance, now)
	var o decay.Outcome
	if req.Caller.Kind() == core.User {
		o = t.users.charge(s, userKeyOf(req.Caller), p, req.Cost, now)
	} else {
		o = t.anons.charge(s, anonKeyOf(req.Caller), p, req.Cost, now)
	}
	return balance.Result{Before: o.Before, Balance: o.Balance, Dropped: o.Dropped, Warned: o.Warned, WarnCharged: o.WarnCharged}, nil
}

// policy converts a core policy to the arithmetic's units.
func policy(p balance.Policy) decay.Policy {
	return decay.Policy{
		Window: int64(p.Window / time.Second), Warn: p.Warn, WarnCost: p.WarnCost,
		WarnEvery: int64(p.WarnEvery), Drop: p.Drop, DropCost: p.DropCost,
	}
}

func newBalanceTable() *balanceTable {
	t := &balanceTable{}
	t.users.init()
	t.anons.init()
	return t
}

func (m *balanceMap[K]) init() {
	m.seed = maphash.MakeSeed()
	for i := range m.shards {
		m.shards[i].m = make(map[K]decay.State)
	}
}

func (m *balanceMap[K]) charge(s *Store, k K, p decay.Policy, cost, now int64) decay.Outcome {
	sh := &m.shards[maphash.Comparable(m.seed, k)%shardCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st, found := sh.m[k]
	if !found && len(sh.m) >= s.perShard {
		sh.makeRoom(s, p, now)
	}
	o := st.Charge(p, cost, now)
	sh.m[k] = st
	return o
}

// makeRoom frees an entry in a full shard: forgotten balances first (at
// most one such sweep per second), then one whose stored balance (at least
// what it reads now, since it only decays) is below the warning threshold,
// and an arbitrary one only when every caller of the shard is warned or
// dropped: a flood of new callers must not set a dropped caller free while
// one with less at stake is left.
func (sh *balanceShard[K]) makeRoom(s *Store, p decay.Policy, now int64) {
	if now-sh.lastSweep >= decay.Second {
		sh.lastSweep = now
		if sh.sweep(p.Window, now) > 0 {
			return
		}
	}
	var victim K
	found := false
	for k, st := range sh.m {
		victim, found = k, true
		if st.Balance(p.Window) < p.Warn {
			break
		}
	}
	if found {
		delete(sh.m, victim)
		s.evictions.Add(1)
	}
}

// sweep drops the balances that are zero at now: more than 4 windows
// after their last step. A shard's map is rebuilt when it emptied, so
// that its memory goes back to the runtime.
func (sh *balanceShard[K]) sweep(window, now int64) int {
	n := 0
	for k, st := range sh.m {
		if now-st.Last >= decay.Forget(window) {
			delete(sh.m, k)
			n++
		}
	}
	if n > 0 && len(sh.m) == 0 {
		sh.m = make(map[K]decay.State)
	}
	return n
}

func (m *balanceMap[K]) sweep(window, now int64) int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += sh.sweep(window, now)
		sh.mu.Unlock()
	}
	return n
}

func (m *balanceMap[K]) len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// sweepBalances drops forgotten balances and returns how many.
func (s *Store) sweepBalances(now int64) int {
	n := 0
	s.balances.Range(func(k, v any) bool {
		t, window := v.(*balanceTable), int64(k.(balanceKey).window/time.Second)
		n += t.users.sweep(window, now) + t.anons.sweep(window, now)
		return true
	})
	return n
}

// lenBalances returns the number of balances held.
func (s *Store) lenBalances() int {
	n := 0
	s.balances.Range(func(_, v any) bool {
		t := v.(*balanceTable)
		n += t.users.len() + t.anons.len()
		return true
	})
	return n
}

var _ balance.Store = (*Store)(nil)
