package redisstore_test

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// BenchmarkTake measures decisions against the local Redis of TestMain, with
// limits so high that no request is denied (the over-limit cache never
// answers), batched (MaxBatch 64, the default) and not (MaxBatch 1).
// cmds/op is the number of script calls per decision (one per batch on a
// server, one per hash slot of a batch on a cluster; 1 unbatched), trips/op
// the number of round trips (pipelines or lone commands) per decision, and
// redis-µs/op the time Redis spent running the script.
func BenchmarkTake(b *testing.B) {
	limits := []core.Rate{{Limit: core.MaxLimit, Period: time.Minute}, {Limit: core.MaxLimit, Period: 24 * time.Hour}}
	many := make([]core.Caller, 10000)
	for i := range many {
		many[i] = core.NetworkCaller(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32))
	}
	for _, bc := range []struct {
		name    string
		client  func(b *testing.B) redis.UniversalClient
		callers []core.Caller
	}{
		{name: "Server/HotCaller", client: func(b *testing.B) redis.UniversalClient { return newClient(b, server.Addr) }, callers: many[:1]},
		{name: "Server/10000Callers", client: func(b *testing.B) redis.UniversalClient { return newClient(b, server.Addr) }, callers: many},
		{name: "Cluster/10000Callers", client: func(b *testing.B) redis.UniversalClient { return newClusterClient(b, cluster) }, callers: many},
	} {
		for _, maxBatch := range []int{64, 1} {
			b.Run(fmt.Sprintf("%s/MaxBatch=%d", bc.name, maxBatch), func(b *testing.B) {
				client := bc.client(b)
				hook := &counter{}
				addHook(client, hook)
				s := newServerClockStore(b, redisstore.Config{Client: client, MaxBatch: maxBatch})
				scope := fmt.Sprintf("bench-%d", time.Now().UnixNano())
				ctx := context.Background()
				// Load the script on every node and dial the connections
				// before timing: cmds/op counts decisions, not set-up.
				var wg sync.WaitGroup
				for i := range 32 {
					wg.Go(func() {
						for j := range 100 {
							who := bc.callers[(100*i+j)%len(bc.callers)]
							if _, err := storecall.Take(ctx, s, storecall.Request{Scope: scope, Caller: who, Limits: limits, Cost: 1, Now: storetest.Start}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				var next atomic.Int64
				sent, trips := hook.scripts.Load(), hook.trips.Load()
				usec := scriptMicros(b, client)
				b.ReportAllocs()
				// Many requests in flight, as in a server: a round trip is mostly
				// waiting. 16 goroutines a core: 32 here.
				b.SetParallelism(16)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					req := storecall.Request{Scope: scope, Limits: limits, Cost: 1, Now: storetest.Start}
					for pb.Next() {
						req.Caller = bc.callers[int(next.Add(1))%len(bc.callers)]
						res, err := storecall.Take(ctx, s, req)
						if err != nil || !res.Allowed {
							b.Errorf("allowed %v, error %v", res.Allowed, err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
				b.ReportMetric(float64(hook.scripts.Load()-sent)/float64(b.N), "cmds/op")
				b.ReportMetric(float64(hook.trips.Load()-trips)/float64(b.N), "trips/op")
				b.ReportMetric(float64(scriptMicros(b, client)-usec)/float64(b.N), "redis-µs/op")
			})
		}
	}
}

// scriptMicros returns the microseconds Redis spent running EVALSHA, summed
// over the masters, from INFO commandstats.
func scriptMicros(b *testing.B, client redis.UniversalClient) int64 {
	ctx := context.Background()
	var total atomic.Int64
	read := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
				for field := range strings.SplitSeq(rest, ",") {
					if v, ok := strings.CutPrefix(field, "usec="); ok {
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							return err
						}
						total.Add(n)
					}
				}
			}
		}
		return nil
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, read)
	case *redis.Client:
		err = read(ctx, c)
	}
	if err != nil {
		b.Fatal(err)
	}
	return total.Load()
}

// BenchmarkSlot measures the hash slot of a key as the store computes it
// for every decision on a cluster, to group a batch's decisions by slot: a
// key of an anonymous caller in a scope with two limits.
func BenchmarkSlot(b *testing.B) {
	key := "ratescope:api:{a0a00000000000000000000000000a0ff}:60s,86400s"
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += redisstore.Slot(key)
	}
	require.Equal(b, b.N*redisstore.Slot(key), n)
}

// BenchmarkBatchFloor measures what a script call that decides a batch of
// 64 keys costs Redis per key, for scripts that do less and less of the
// take script's work (ADR 0006), against the local Redis of TestMain: the
// take script itself (two limits); a GET and a SET KEEPTTL of a 105-byte
// value per key, with one TIME a call; a GET per key; and nothing but a
// small answer per key. Every call decides 64 keys of 10,000 callers in
// turn: the take script on the keys it keeps, the others on keys of their
// own that hold the 105-byte value. redis-µs/key is the script's usec
// (INFO commandstats) per key.
func BenchmarkBatchFloor(b *testing.B) {
	const keys = 64
	ctx := context.Background()
	client := newClient(b, server.Addr)
	s := newServerClockStore(b, redisstore.Config{Client: client})
	prefix := fmt.Sprintf("floor-%d:", time.Now().UnixNano())
	limits := []core.Rate{{Limit: core.MaxLimit, Period: time.Minute}, {Limit: core.MaxLimit, Period: 24 * time.Hour}}
	value := strings.Repeat("x", 105)
	taken := make([]string, 10000) // the take script's keys
	args := make([][]any, len(taken))
	valued := make([]string, len(taken)) // the other scripts' keys
	for i := range taken {
		req := storecall.Request{Scope: "floor", Caller: core.UserCaller(fmt.Sprintf("u%d", i)), Limits: limits, Cost: 1, Now: storetest.Start}
		taken[i], args[i] = redisstore.TakeCommand(s, req)
		valued[i] = prefix + taken[i]
		require.NoError(b, client.Set(ctx, valued[i], value, time.Hour).Err())
	}
	for _, bc := range []struct {
		name string
		lua  string // "" for the take script
	}{
		{name: "take"},
		{name: "time+get+set", lua: `local t = redis.call('TIME')
local res = {}
for i = 1, #KEYS do
	local v = redis.call('GET', KEYS[i])
	if not v then v = ARGV[1] end
	redis.call('SET', KEYS[i], v, 'KEEPTTL')
	res[i] = {1, 2, 3, 4}
end
return res`},
		{name: "get", lua: `local res = {}
for i = 1, #KEYS do
	local v = redis.call('GET', KEYS[i])
	res[i] = {1, 2, 3, 4}
end
return res`},
		{name: "answer", lua: `local res = {}
for i = 1, #KEYS do
	res[i] = {1, 2, 3, 4}
end
return res`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			script := redis.NewScript(bc.lua)
			if bc.lua == "" {
				script = redisstore.TakeScript()
			}
			call := func(n int) *redis.Cmd {
				ks := make([]string, keys)
				argv := []any{value}
				if bc.lua == "" {
					argv = make([]any, 0, 2*keys)
				}
				for j := range ks {
					k := (n*keys + j) % len(taken)
					if bc.lua == "" {
						ks[j] = taken[k]
						argv = append(argv, args[k]...)
					} else {
						ks[j] = valued[k]
					}
				}
				return script.Run(ctx, client, ks, argv...)
			}
			require.NoError(b, call(0).Err())
			usec := scriptMicros(b, client)
			b.ResetTimer()
			for n := range b.N {
				if err := call(n).Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(scriptMicros(b, client)-usec)/float64(b.N*keys), "redis-µs/key")
		})
	}
}
