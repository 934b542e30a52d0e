package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// TestResetAndOtherProcessesCaches checks what the reference says of a
// reset with several processes on one Redis: the process that resets
// forgets its remembered refusals, a process without the over-limit cache
// sees the reset at once, and one whose cache remembers a refusal of the
// caller keeps answering it until it resets too, or CacheMaxAge has
// passed.
func TestResetAndOtherProcessesCaches(t *testing.T) {
	t.Parallel()
	for _, tc := range serverAndCluster {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			prefix := uniquePrefix()
			var takeAt func(s *redisstore.Store, now time.Time) bool
			cached := newStore(t, redisstore.Config{Client: tc.client(t), Prefix: prefix})
			uncached := newStore(t, redisstore.Config{Client: tc.client(t), Prefix: prefix, CacheSize: -1})
			bounded := newStore(t, redisstore.Config{Client: tc.client(t), Prefix: prefix, CacheMaxAge: time.Second})
			req := storecall.Request{Scope: "reset", Caller: anon("192.0.2.80"), Limits: []core.Rate{core.PerMinute(2), core.PerDay(100)}, Cost: 1, Now: storetest.Start}
			take := func(s *redisstore.Store) bool {
				t.Helper()
				return takeAt(s, storetest.Start)
			}
			takeAt = func(s *redisstore.Store, now time.Time) bool {
				t.Helper()
				r := req
				r.Now = now
				res, err := storecall.Take(ctx, s, r)
				require.NoError(t, err)
				return res.Allowed
			}
			require.True(t, take(cached))
			require.True(t, take(uncached))
			require.False(t, take(cached))
			require.Equal(t, 1, cached.Stats().Cached, "the refusal is remembered")
			require.False(t, take(uncached))
			require.False(t, take(bounded))
			require.Equal(t, 1, bounded.Stats().Cached)

			require.NoError(t, storecall.Reset(ctx, uncached, req))
			assert.True(t, take(uncached), "the process without a cache sees the reset at once")
			hits := cached.Stats().CacheHits
			assert.False(t, take(cached), "another process's cache still refuses")
			assert.Equal(t, hits+1, cached.Stats().CacheHits)
			assert.False(t, takeAt(bounded, storetest.Start.Add(999*time.Millisecond)), "remembered for up to CacheMaxAge")
			assert.Equal(t, int64(1), bounded.Stats().CacheHits)
			assert.True(t, takeAt(bounded, storetest.Start.Add(time.Second)), "then Redis is asked, and has room")

			require.NoError(t, storecall.Reset(ctx, cached, req))
			assert.Zero(t, cached.Stats().Cached, "a reset forgets the process's own refusals of the key")
			res, err := storecall.Take(ctx, cached, req)
			require.NoError(t, err)
			require.True(t, res.Allowed)
			assert.Equal(t, int64(1), res.Limits[0].Remaining, "the whole limit less this request")
			assert.Equal(t, int64(99), res.Limits[1].Remaining)
		})
	}
}

// TestResetErrors checks that a reset Redis cannot run is an error.
func TestResetErrors(t *testing.T) {
	t.Parallel()
	s := newStore(t, redisstore.Config{Client: newClient(t, server.Addr)})
	ctx := context.Background()
	assert.Error(t, storecall.Reset(ctx, s, storecall.Request{Scope: "reset", Caller: anon("192.0.2.81")}), "no limits")
	assert.Error(t, s.ResetBalance(ctx, balance.Request{Scope: "reset", Caller: anon("192.0.2.81")}), "no window")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err := storecall.Reset(canceled, s, storecall.Request{Scope: "reset", Caller: anon("192.0.2.81"), Limits: []core.Rate{core.PerMinute(1)}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "redisstore: reset:")

	_, err = redisstore.New(redisstore.Config{Client: newClient(t, server.Addr), CacheMaxAge: -time.Second})
	assert.ErrorContains(t, err, "CacheMaxAge -1s: must not be negative")
}
