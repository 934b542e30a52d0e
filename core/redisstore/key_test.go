package redisstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// TestLongUserIDs counts user ids of up to 1 MiB: each key stays small (a
// long id is counted by its digest), the ids that differ only in their last
// byte, and a long id and the digest form written as an id, keep their
// counts apart, and the over-limit cache holds small keys too. (Before, a
// 1 MiB id made a 1 MiB key.)
func TestLongUserIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t, server.Addr)
	prefix := uniquePrefix()
	s := newStore(t, redisstore.Config{Client: client, Prefix: prefix})
	huge := strings.Repeat("x", 1<<20)
	ids := []string{
		huge,
		huge[:len(huge)-1] + "y",
		strings.Repeat("a", 65),
		strings.Repeat("a", 64),
		digestForm(strings.Repeat("a", 65)), // the digest form, sent as an id
	}
	limits := []core.Rate{core.PerMinute(1)}
	for _, id := range ids {
		res, err := storecall.Take(ctx, s, storecall.Request{Scope: "long", Caller: core.UserCaller(id), Limits: limits, Cost: 1, Now: storetest.Start})
		require.NoError(t, err)
		assert.True(t, res.Allowed, "first request of an id of %d bytes: a count of its own", len(id))
	}
	for _, id := range ids {
		res, err := storecall.Take(ctx, s, storecall.Request{Scope: "long", Caller: core.UserCaller(id), Limits: limits, Cost: 1, Now: storetest.Start})
		require.NoError(t, err)
		assert.False(t, res.Allowed, "second request of an id of %d bytes is counted", len(id))
	}
	keys := scanKeys(t, client, prefix)
	require.Len(t, keys, len(ids))
	for _, k := range keys {
		assert.LessOrEqual(t, len(k), len(prefix)+len("long:{u}:60s")+71, "key %q", k)
	}
	assert.Equal(t, len(ids), s.Stats().Cached, "the cache remembers each, under its small key")
}

// digestForm is the form under which a store counts the user id id.
func digestForm(id string) string {
	form, _ := core.UserCaller(id).Key().User()
	return form
}
