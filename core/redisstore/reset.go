package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
)

// Reset implements [core.Counter] with one DEL of the caller's key, the
// key Take counts on (see the package documentation, Keys): it is built
// from the counter's scope and periods and the caller's key. On a Redis Cluster the
// key's hash tag is the caller's id, so the command goes to one master.
// A Take that Redis runs before the DEL is cleared with the rest; one run
// after it counts afresh.
//
// Reset also forgets the denials of the caller's key that this process's
// over-limit cache remembers. The caches of other processes sharing the
// Redis are not told: one that remembers a denial of the caller answers
// it, without asking Redis, until a request of cost 1 would have fitted
// (at most the longest period), unless Config.CacheMaxAge bounds it; run
// those processes with CacheSize -1 if a reset must free a blocked caller
// everywhere at once.
//
// The command is not sent through the circuit breaker or batched: a reset
// is rare and its caller waits for its answer, within ctx. The error is
// Redis's or ctx's, wrapped, or one for a request without limits.
func (c *counter) Reset(ctx context.Context, k core.Key, _ time.Time) error {
	s := c.s
	var buf [128]byte
	key := string(appendKey(buf[:0], &request{head: c.head, tail: c.tail, key: k}))
	if err := s.client.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("redisstore: reset: %w", err)
	}
	if s.cache != nil {
		s.cache.forgetKey(key)
	}
	return nil
}

// ResetBalance implements [balance.Store] with one DEL of the
// caller's balance key (see [Store.Charge]), which depends on the window
// of req.Policy. As for [Store.Reset], the command is not batched, and a
// Charge is run wholly before or after it.
func (s *Store) ResetBalance(ctx context.Context, req balance.Request) error {
	if err := checkBalanceRequest(&req); err != nil {
		return err
	}
	if err := s.client.Del(ctx, balanceKey(s.prefix, &req)).Err(); err != nil {
		return fmt.Errorf("redisstore: reset balance: %w", err)
	}
	return nil
}

// forgetKey drops every denial remembered for key, whatever the limits,
// and moves the shard's gen on, as [denials.forget] does for a give-back.
func (d *denials) forgetKey(key string) {
	sh := d.shard(&cacheKey{key: key})
	sh.gen.Add(1)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for k := range sh.m {
		if k.key == key {
			delete(sh.m, k)
		}
	}
}

var _ balance.Store = (*Store)(nil)
