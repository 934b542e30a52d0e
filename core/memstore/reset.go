package memstore

import (
	"context"
	"hash/maphash"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
)

// reset drops the entries of key in every table of the scope and kind of
// tk, whatever their periods or counter width, and their marks, under the
// lock of each entry's shard, so that it is atomic with the caller's
// decisions.
func (s *Store) reset(tk tableKey, key core.Key) {
	s.tables.Range(func(k, v any) bool {
		if other := k.(tableKey); other.scope == tk.scope && other.kind == tk.kind {
			v.(*keyedTable).table.reset(key)
		}
		return true
	})
}

// reset drops the entry of key, if there is one, and its mark.
func (t *genericTable[K, T, W]) reset(key core.Key) {
	k := t.id(key)
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

// ResetBalance implements [balance.Store]: it drops the caller's
// balance in req.Scope, whatever the window (req.Policy is not needed),
// under the lock of the caller's shard. It never returns an error.
func (s *Store) ResetBalance(_ context.Context, req balance.Request) error {
	s.balances.Range(func(k, v any) bool {
		if k.(balanceKey).scope != req.Scope {
			return true
		}
		t := v.(*balanceTable)
		if req.Caller.Kind() == core.User {
			t.users.reset(userKeyOf(req.Caller))
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

var _ balance.Store = (*Store)(nil)
