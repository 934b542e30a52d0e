package benchmarks_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/benchmarks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
)

func init() {
	redisContenders = append([]redisContender{{"ratescope", func(tb testing.TB, rdb *redis.Client, n, limits int) decider {
		// The peers wait for Redis as long as go-redis lets them (3s by
		// default); so does ratescope here, instead of its 50ms default.
		st, err := redisstore.New(redisstore.Config{Client: rdb, Timeout: 3 * time.Second})
		if err != nil {
			tb.Fatal(err)
		}
		lim := newRatescopeWith(tb, st, []core.Rate{core.PerMinute(int64(n)), core.PerDay(int64(n))}[:limits]...)
		return func(ctx context.Context, i int) (bool, error) {
			caller := core.NetworkCaller(netip.PrefixFrom(benchmarks.CallerAddr(i), 32))
			d, err := lim.AllowN(ctx, "api", caller, 1)
			if err == nil {
				err = d.StoreErr
			}
			return d.Allowed, err
		}
	}}}, redisContenders...)
}
