package benchmarks_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/throttled/throttled/v2"
	throttledredis "github.com/throttled/throttled/v2/store/goredisstore.v9"
	ulule "github.com/ulule/limiter/v3"
	uleredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/ratescope/ratescope/benchmarks"
)

// redisAddr is the address of the redis-server TestMain started, or empty
// with redisErr saying why there is none.
var (
	redisAddr string
	redisErr  error
)

func TestMain(m *testing.M) {
	stop, err := startRedis()
	if err != nil {
		redisErr = err
	}
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// startRedis starts a redis-server that keeps nothing on disk on a free
// loopback port and waits until it answers.
func startRedis() (stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("no redis-server (apt-get install redis-server): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err = rdb.Ping(context.Background()).Err(); err == nil {
			redisAddr = addr
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("redis-server on %s did not answer: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisGoroutines is how many goroutines send decisions at once: many
// callers waiting on the network together, as in a busy server.
const redisGoroutines = 32

// tripCounter is a go-redis hook that counts round trips (one per command
// sent alone, one per pipeline) and commands, in all and by name.
type tripCounter struct {
	trips, cmds atomic.Int64
	byName      sync.Map // command name (lower case) -> *atomic.Int64
}

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(int64(len(cmds)))
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *tripCounter) count(cmd redis.Cmder) {
	v, ok := c.byName.Load(cmd.Name())
	if !ok {
		v, _ = c.byName.LoadOrStore(cmd.Name(), new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// sent returns how many commands called name the client sent.
func (c *tripCounter) sent(name string) int64 {
	if v, ok := c.byName.Load(name); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (c *tripCounter) reset() {
	c.trips.Store(0)
	c.cmds.Store(0)
	c.byName.Range(func(_, v any) bool {
		v.(*atomic.Int64).Store(0)
		return true
	})
}

// resetRedisStats clears the server's command statistics (CONFIG
// RESETSTAT), from a client of its own that no tripCounter sees.
func resetRedisStats(tb testing.TB) {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		tb.Fatal(err)
	}
}

// redisMicros returns the microseconds Redis spent running the commands
// that hook saw the client send since the last resetRedisStats, from INFO
// commandstats: each command's usec, a script's including the commands it
// calls. A command the client sent that a script also calls (throttled's
// GET) counts in the share of its calls that the client sent.
func redisMicros(tb testing.TB, hook *tripCounter) float64 {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		var calls, usec float64
		for f := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseFloat(v, 64)
			case "usec":
				usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		if sent := float64(hook.sent(name)); sent > 0 && calls > 0 {
			total += usec * min(1, sent/calls)
		}
	}
	return total
}

// newRedis returns a client of the test server with a connection per
// goroutine, already dialled, and the hook that counts its round trips.
func newRedis(tb testing.TB) (*redis.Client, *tripCounter) {
	tb.Helper()
	if redisErr != nil {
		tb.Fatal(redisErr)
	}
	rdb := redis.NewClient(&redis.Options{
		Addr: redisAddr, PoolSize: redisGoroutines, MinIdleConns: redisGoroutines, ContextTimeoutEnabled: true,
	})
	tb.Cleanup(func() { rdb.Close() })
	// Dial every connection now, so that no handshake is counted.
	done := make(chan error, redisGoroutines)
	for range redisGoroutines {
		go func() { done <- rdb.Ping(context.Background()).Err() }()
	}
	for range redisGoroutines {
		if err := <-done; err != nil {
			tb.Fatal(err)
		}
	}
	c := new(tripCounter)
	rdb.AddHook(c)
	return rdb, c
}

// runID keeps the keys of this process apart from those of earlier runs on
// a server that outlived them; the benchmarks never flush a server.
var runID = strconv.FormatInt(time.Now().UnixNano(), 36)

var callerBase atomic.Int64

// freshCallers returns the first of n caller numbers no other benchmark of
// this process uses, so that every run starts from empty counts.
func freshCallers(n int) int {
	return int(callerBase.Add(int64(n))) - n
}

// decider decides one request from caller i; it reports whether the
// request was allowed.
type decider func(ctx context.Context, i int) (bool, error)

// A redisContender is a limiter with a Redis store, enforcing limits of n
// a minute and, with two limits, n a day.
type redisContender struct {
	name  string
	build func(tb testing.TB, rdb *redis.Client, n int, limits int) decider
}

var redisContenders = []redisContender{
	{"ulule", func(tb testing.TB, rdb *redis.Client, n, limits int) decider {
		var ls []*ulule.Limiter
		for _, p := range []time.Duration{time.Minute, day}[:limits] {
			st, err := uleredis.NewStoreWithOptions(rdb, ulule.StoreOptions{Prefix: "ulule-" + runID + "-" + p.String(), MaxRetry: 3})
			if err != nil {
				tb.Fatal(err)
			}
			ls = append(ls, ulule.New(st, ulule.Rate{Period: p, Limit: int64(n)}))
		}
		return func(ctx context.Context, i int) (bool, error) {
			key := benchmarks.CallerAddr(i).String()
			for _, l := range ls {
				c, err := l.Get(ctx, key)
				if err != nil || c.Reached {
					return false, err
				}
			}
			return true, nil
		}
	}},
	{"redis_rate", func(tb testing.TB, rdb *redis.Client, n, limits int) decider {
		l := redis_rate.NewLimiter(rdb)
		type lim struct {
			prefix string
			limit  redis_rate.Limit
		}
		var ls []lim
		for _, p := range []time.Duration{time.Minute, day}[:limits] {
			ls = append(ls, lim{"redis_rate-" + runID + "-" + p.String() + ":", redis_rate.Limit{Rate: n, Burst: n, Period: p}})
		}
		return func(ctx context.Context, i int) (bool, error) {
			key := benchmarks.CallerAddr(i).String()
			for _, x := range ls {
				res, err := l.Allow(ctx, x.prefix+key, x.limit)
				if err != nil || res.Allowed == 0 {
					return false, err
				}
			}
			return true, nil
		}
	}},
	{"throttled", func(tb testing.TB, rdb *redis.Client, n, limits int) decider {
		var rls []*throttled.GCRARateLimiterCtx
		for _, r := range []throttled.Rate{throttled.PerMin(n), throttled.PerDay(n)}[:limits] {
			st, err := throttledredis.NewCtx(rdb, fmt.Sprintf("throttled-%s-%d:", runID, len(rls)))
			if err != nil {
				tb.Fatal(err)
			}
			rl, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: r, MaxBurst: n - 1})
			if err != nil {
				tb.Fatal(err)
			}
			rls = append(rls, rl)
		}
		return func(ctx context.Context, i int) (bool, error) {
			key := benchmarks.CallerAddr(i).String()
			for _, rl := range rls {
				limited, _, err := rl.RateLimitCtx(ctx, key, 1)
				if err != nil || limited {
					return false, err
				}
			}
			return true, nil
		}
	}},
}

// BenchmarkRedis decides requests of Callers callers in turn (callers=10k)
// from 32 goroutines, against the test redis-server, with one limit and
// with two (stacked for the peers). The cases of issue 22's targets also
// run with one caller (callers=1) and from 8 goroutines: ratescope, and
// ulule with one limit. It reports Redis round trips per decision,
// decisions a second and the microseconds of Redis time per decision
// (INFO commandstats, see redisMicros).
func BenchmarkRedis(b *testing.B) {
	type shape struct{ callers, goroutines int }
	all := []shape{{benchmarks.Callers, redisGoroutines}, {1, redisGoroutines}, {benchmarks.Callers, 8}, {1, 8}}
	for _, c := range redisContenders {
		for _, limits := range []int{1, 2} {
			shapes := all[:1]
			if c.name == "ratescope" || c.name == "ulule" && limits == 1 {
				shapes = all
			}
			for _, sh := range shapes {
				name := fmt.Sprintf("limiter=%s/limits=%d/callers=%s/goroutines=%d", c.name, limits, callersName(sh.callers), sh.goroutines)
				b.Run(name, func(b *testing.B) { benchRedis(b, c, limits, sh.callers, sh.goroutines) })
			}
		}
	}
}

// callersName is how a benchmark's name says its number of callers: 1 or
// 10k.
func callersName(n int) string {
	if n == benchmarks.Callers {
		return "10k"
	}
	return strconv.Itoa(n)
}

// benchRedis is one case of BenchmarkRedis.
func benchRedis(b *testing.B, c redisContender, limits, callers, goroutines int) {
	rdb, trips := newRedis(b)
	decide := c.build(b, rdb, benchmarks.Limit, limits)
	base := freshCallers(callers)
	var start, denied, failed atomic.Int64
	var lastErr atomic.Value
	// Every caller is known before the clock starts (and every script
	// loaded): the steady state of a busy server.
	warmUp(b, decide, base, callers)
	trips.reset()
	resetRedisStats(b)
	b.ReportAllocs()
	b.SetParallelism(max(1, goroutines/runtimeProcs()))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(start.Add(1)) * 7919
		for pb.Next() {
			ok, err := decide(ctx, base+i%callers)
			switch {
			case err != nil:
				failed.Add(1)
				lastErr.Store(err)
			case !ok:
				denied.Add(1)
			}
			i++
		}
	})
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d decisions failed, the last with: %v", n, b.N, lastErr.Load())
	}
	if n := denied.Load(); n > 0 {
		b.Fatalf("%d of %d requests denied", n, b.N)
	}
	b.ReportMetric(float64(trips.trips.Load())/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(redisMicros(b, trips)/float64(b.N), "redis-µs/op")
}

// warmUp decides one request of each of n callers from base, from
// redisGoroutines goroutines.
func warmUp(b *testing.B, decide decider, base, n int) {
	var next atomic.Int64
	errs := make(chan error, redisGoroutines)
	for range redisGoroutines {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					errs <- nil
					return
				}
				if _, err := decide(context.Background(), base+i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range redisGoroutines {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// floodLimit is the limit, a minute and a day, of BenchmarkFlood's caller.
const floodLimit = 10

// BenchmarkFlood has one caller, already over its limits, send requests as
// fast as redisGoroutines goroutines can. It reports Redis commands and
// microseconds of Redis time (see redisMicros) per denied request, denied
// requests a second, and the share of requests allowed (a limit that
// refills, such as GCRA's, lets a few through).
func BenchmarkFlood(b *testing.B) {
	for _, c := range redisContenders {
		b.Run("limiter="+c.name, func(b *testing.B) {
			rdb, trips := newRedis(b)
			decide := c.build(b, rdb, floodLimit, 2)
			caller := freshCallers(1)
			ctx := context.Background()
			for range 2 * floodLimit {
				if _, err := decide(ctx, caller); err != nil {
					b.Fatal(err)
				}
			}
			if ok, _ := decide(ctx, caller); ok {
				b.Fatal("the caller is not over its limit")
			}
			trips.reset()
			resetRedisStats(b)
			var allowed, failed atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(redisGoroutines / max(1, runtimeProcs()))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ok, err := decide(ctx, caller)
					switch {
					case err != nil:
						failed.Add(1)
					case ok:
						allowed.Add(1)
					}
				}
			})
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d decisions failed", n, b.N)
			}
			denied := float64(int64(b.N) - allowed.Load())
			b.ReportMetric(float64(trips.cmds.Load())/denied, "cmds/denied")
			b.ReportMetric(float64(trips.trips.Load())/denied, "roundtrips/denied")
			b.ReportMetric(denied/b.Elapsed().Seconds(), "denied/s")
			b.ReportMetric(100*float64(allowed.Load())/float64(b.N), "%allowed")
			b.ReportMetric(redisMicros(b, trips)/denied, "redis-µs/denied")
		})
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
