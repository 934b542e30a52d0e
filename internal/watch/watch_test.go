package watch_test

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/counters"
	"github.com/ratescope/ratescope/internal/testkit/metricstest"
	"github.com/ratescope/ratescope/internal/watch"
)

// redisStats is a value with a Redis store's counters, fixed.
type redisStats counters.Redis

func (r redisStats) Stats() counters.Redis { return counters.Redis(r) }

// evictingLimiter is a value of two kinds at once.
type evictingLimiter struct{ failures, evictions int64 }

func (e evictingLimiter) StoreFailures() int64 { return e.failures }
func (e evictingLimiter) Evictions() int64     { return e.evictions }

func TestTotals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	down, err := core.New(core.Config{Store: metricstest.DownStore{}, NumProxies: new(0), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for range 2 {
		_, err = down.Allow(ctx, "api", core.Caller{}) // fails open
		require.NoError(t, err)
	}
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)

	for _, tt := range []struct {
		name   string
		values []any
		want   watch.Totals
	}{
		{name: "empty", want: watch.Totals{}},
		{name: "a limiter that never failed", values: []any{lim}, want: watch.Totals{HasStoreFailures: true}},
		{name: "two limiters", values: []any{lim, down}, want: watch.Totals{StoreFailures: 2, HasStoreFailures: true}},
		{name: "a memory store", values: []any{store}, want: watch.Totals{HasEvictions: true}},
		{name: "a value of two kinds", values: []any{evictingLimiter{failures: 3, evictions: 4}, down},
			want: watch.Totals{StoreFailures: 5, HasStoreFailures: true, Evictions: 4, HasEvictions: true}},
		{name: "two Redis stores", values: []any{
			redisStats{Calls: 10, RoundTrips: 4, Failures: 1, Cached: 2, Nodes: 1},
			redisStats{Calls: 5, RoundTrips: 5, FailedFast: 7, BreakerOpen: true, OpenNodes: 1, Nodes: 1},
		}, want: watch.Totals{HasRedis: true, Redis: counters.Redis{
			Calls: 15, RoundTrips: 9, Failures: 1, FailedFast: 7, Cached: 2, BreakerOpen: true, OpenNodes: 1, Nodes: 2,
		}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s watch.Set
			for _, v := range tt.values {
				require.NoError(t, s.Add(v), "%T", v)
			}
			assert.Equal(t, tt.want, s.Totals())
		})
	}
}

func TestAddRefuses(t *testing.T) {
	t.Parallel()
	var s watch.Set
	for _, v := range []any{nil, 42, "limiter", metricstest.DownStore{}, core.Caller{}} {
		assert.Error(t, s.Add(v), "%T", v)
	}
	assert.Equal(t, watch.Totals{}, s.Totals(), "nothing added")
}

// Every counter of counters.Redis is added up, a field added to it
// later too: each numeric field set to 1 in one value and 2 in the other
// adds up to 3.
func TestTotalsAddsEveryRedisField(t *testing.T) {
	t.Parallel()
	var a, b counters.Redis
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		switch va.Field(i).Kind() {
		case reflect.Int, reflect.Int64:
			va.Field(i).SetInt(1)
			vb.Field(i).SetInt(2)
		case reflect.Bool:
			vb.Field(i).SetBool(true)
		default:
			t.Fatalf("counters.Redis.%s is a %s: say how Totals adds it up", va.Type().Field(i).Name, va.Field(i).Kind())
		}
	}
	var s watch.Set
	require.NoError(t, s.Add(redisStats(a)))
	require.NoError(t, s.Add(redisStats(b)))
	got := reflect.ValueOf(s.Totals().Redis)
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		switch f := got.Field(i); f.Kind() {
		case reflect.Bool:
			assert.True(t, f.Bool(), "%s: open if one is open", name)
		default:
			assert.Equal(t, int64(3), f.Int(), name)
		}
	}
}

// Values added while the totals are read: run with -race.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	var s watch.Set
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				assert.NoError(t, s.Add(evictingLimiter{failures: 1}))
				_ = s.Totals()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(400), s.Totals().StoreFailures)
}
