package memstore

import (
	"context"
	"hash/maphash"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/storekey"
)

// Reset implements [core.ResetStore]: it drops the caller's entry from
// every table of req.Scope and the caller's kind, whatever their limits
// (req.Limits is not needed: a table per set of periods and counter width
// may hold the caller, if limiters with other rates share the store), each
// under the lock of the caller's shard, so that a concurrent Take is
// decided wholly before or wholly after. It never returns an error.
func (s *Store) Reset(_ context.Context, req core.Request) error {
	kind := req.Caller.Kind()
	s.tables.Range(func(k, v any) bool {
		if key := k.(tableKey); key.scope == req.Scope && key.kind == kind {
			v.(*keyedTable).table.reset(req.Caller)
		}
		return true
	})
	return nil
}

// reset drops the entry of caller, if there is one, and its mark.
func (t *genericTable[K, T, W]) reset(caller core.Caller) {
	k := t.id(caller)
	sh := &t.shards[t.hash(k)%shardCount]
	sh.mu.Lock()
	slot, found := sh.index[k]
	if found {
		sh.drop(k, slot)
	}
	sh.mu.Unlock()
	if found {
		t.store.entries.Add(-1)
	}
}

// reset drops the entry of caller from the table of its address family.
func (a *anonPair[T, W]) reset(caller core.Caller) {
	if caller.Network().Addr().Is4() {
		a.v4.reset(caller)
	} else {
		a.v6.reset(caller)
	}
}

// ResetBalance implements [core.BalanceResetStore]: it drops the caller's
// balance in req.Scope, whatever the window (req.Policy is not needed),
// under the lock of the caller's shard. It never returns an error.
func (s *Store) ResetBalance(_ context.Context, req core.BalanceRequest) error {
	s.balances.Range(func(k, v any) bool {
		if k.(balanceKey).scope != req.Scope {
			return true
		}
		t := v.(*balanceTable)
		if req.Caller.Kind() == core.User {
			t.users.reset(storekey.User(req.Caller.User()))
		} else {
			t.anons.reset(anonKeyOf(req.Caller))
		}
		return true
	})
	return nil
}

func (m *balanceMap[K]) reset(k K) {
	sh := &m.shards[maphash.Comparable(m.seed, k)%shardCount]
	sh.mu.Lock()
	delete(sh.m, k)
	sh.mu.Unlock()
}

var (
	_ core.ResetStore        = (*Store)(nil)
	_ core.BalanceResetStore = (*Store)(nil)
)
