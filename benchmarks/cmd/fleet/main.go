// Command fleet measures Redis rate-limit stores serving a fleet: N
// application processes (separate OS processes, each with its own client
// and store) deciding at once through one Redis or one 3-master Redis
// Cluster, which it starts itself on loopback. Each process runs G
// goroutines that decide requests in turn for 10,000 callers and one hot
// caller (one decision in ten), all processes sharing the callers, so that
// they share the counts. Limits are high enough that nothing is denied.
//
// For every target (redis, cluster), number of processes and store, it
// reports the fleet's decisions a second, Redis's time per decision from
// INFO commandstats (the commands' usec, summed over the masters: what the
// issue's targets name) and from INFO cpu (the Redis processes' whole CPU
// time: parsing, the event loop and the network as well), script calls
// per decision, and the 50th and 99th percentiles of a decision's latency
// over all the processes' decisions. Cases run one after the other, each
// store in turn within a round, so that a change of the machine's load
// falls on every store alike.
//
// Stores: ratescope (two limits, a minute and a day, its Redis store with
// a 3s Timeout as the peers wait as long as go-redis lets them), ulule and
// redis_rate (one limit a minute, their Redis stores). A second binary,
// built from another version of ratescope (-baseline), runs as the store
// "ratescope-<label>", to compare with the version of today in one run.
//
// Usage (benchmarks/fleet.sh builds both binaries and runs it):
//
//	fleet -procs 1,2,4 -goroutines 32 -duration 5s -targets redis,cluster \
//	      -baseline ./fleet-v0.1.0 -baseline-label v0.1.0 -out results/fleet.md
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	uleredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/ratescope/ratescope/benchmarks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// hotEvery is how often a process's decision is the hot caller's: one in
// hotEvery.
const hotEvery = 10

func main() {
	log.SetFlags(0)
	log.SetPrefix("fleet: ")
	child := flag.Bool("child", false, "run as one application process (internal: the parent starts these)")
	store := flag.String("store", "ratescope", "child: the store")
	addrs := flag.String("addrs", "", "child: Redis addresses, comma-separated")
	cluster := flag.Bool("cluster", false, "child: addrs are a cluster's")
	prefix := flag.String("prefix", "fleet:", "child: key prefix of this case")
	goroutines := flag.Int("goroutines", 32, "goroutines per process")
	duration := flag.Duration("duration", 5*time.Second, "how long each case decides")
	procs := flag.String("procs", "1,2,4", "numbers of processes, comma-separated")
	stores := flag.String("stores", "ratescope,ulule,redis_rate", "stores, comma-separated")
	targets := flag.String("targets", "redis,cluster", "targets, comma-separated: redis, cluster")
	baseline := flag.String("baseline", "", "a fleet binary built from another version of ratescope, run as store ratescope-<label>")
	label := flag.String("baseline-label", "baseline", "the name of the baseline version")
	rounds := flag.Int("rounds", 1, "times each case runs; the table shows the median of decisions/s and its case's other figures")
	out := flag.String("out", "", "write the Markdown table to this file too")
	flag.Parse()
	if *child {
		if err := runChild(*store, strings.Split(*addrs, ","), *cluster, *prefix, *goroutines, *duration); err != nil {
			log.Fatal(err)
		}
		return
	}
	p := parent{goroutines: *goroutines, duration: *duration, baseline: *baseline, label: *label}
	for _, s := range strings.Split(*procs, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			log.Fatalf("-procs: %q is not a number of processes", s)
		}
		p.procs = append(p.procs, n)
	}
	p.stores = strings.Split(*stores, ",")
	if *baseline != "" {
		p.stores = append(p.stores, "ratescope-"+*label)
	}
	if err := p.run(strings.Split(*targets, ","), *rounds, *out); err != nil {
		log.Fatal(err)
	}
}

// result is what a child reports: its decisions, failures, time and
// latency histogram (see bucket).
type result struct {
	Decisions int64           `json:"decisions"`
	Failed    int64           `json:"failed"`
	Denied    int64           `json:"denied"`
	Elapsed   time.Duration   `json:"elapsed"`
	Hist      map[int64]int64 `json:"hist"`
	LastErr   string          `json:"last_err,omitempty"`
}

// bucket rounds a latency in µs to 2 significant digits at most, to keep
// the histograms small: exact below 100µs.
func bucket(us int64) int64 {
	step := int64(1)
	for v := us; v >= 100; v /= 10 {
		step *= 10
	}
	return us / step * step
}

// decider decides one request of caller i (Callers is the hot caller).
type decider func(ctx context.Context, i int) (bool, error)

// newDecider builds the store's decider on client rdb.
func newDecider(store string, rdb redis.UniversalClient, prefix string) (decider, error) {
	addr := func(i int) netip.Addr { return benchmarks.CallerAddr(i) }
	switch {
	case strings.HasPrefix(store, "ratescope"):
		st, err := redisstore.New(redisstore.Config{Client: rdb, Timeout: 3 * time.Second, Prefix: prefix})
		if err != nil {
			return nil, err
		}
		rates := []core.Rate{core.PerMinute(benchmarks.Limit), core.PerDay(benchmarks.Limit)}
		lim, err := core.New(core.Config{
			Store:      st,
			Scopes:     []core.Scope{{Name: "api", Anon: rates, User: rates}},
			NumProxies: new(0),
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, i int) (bool, error) {
			d, err := lim.AllowN(ctx, "api", lim.AddrCaller(addr(i)), 1)
			if err == nil {
				err = d.StoreErr
			}
			return d.Allowed, err
		}, nil
	case store == "ulule":
		st, err := uleredis.NewStoreWithOptions(rdb, ulule.StoreOptions{Prefix: prefix, MaxRetry: 3})
		if err != nil {
			return nil, err
		}
		l := ulule.New(st, ulule.Rate{Period: time.Minute, Limit: benchmarks.Limit})
		return func(ctx context.Context, i int) (bool, error) {
			c, err := l.Get(ctx, addr(i).String())
			return err == nil && !c.Reached, err
		}, nil
	case store == "redis_rate":
		l := redis_rate.NewLimiter(rdb)
		limit := redis_rate.Limit{Rate: benchmarks.Limit, Burst: benchmarks.Limit, Period: time.Minute}
		return func(ctx context.Context, i int) (bool, error) {
			res, err := l.Allow(ctx, prefix+addr(i).String(), limit)
			return err == nil && res.Allowed > 0, err
		}, nil
	}
	return nil, fmt.Errorf("unknown store %q", store)
}

// runChild is one application process: it builds its client and store,
// decides one request of every caller (the warm-up: every key exists, every
// script is loaded), prints "ready", waits for a line on stdin, decides
// for d from g goroutines, and prints its result as JSON.
func runChild(store string, addrs []string, cluster bool, prefix string, g int, d time.Duration) error {
	var rdb redis.UniversalClient
	if cluster {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: g, ContextTimeoutEnabled: true})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: addrs[0], PoolSize: g, MinIdleConns: g, ContextTimeoutEnabled: true})
	}
	defer rdb.Close()
	decide, err := newDecider(store, rdb, prefix)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	var warmErr atomic.Value
	for range g {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i > benchmarks.Callers {
					return
				}
				if _, err := decide(ctx, i); err != nil {
					warmErr.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := warmErr.Load().(error); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the start: %w", err)
	}

	var res result
	var mu sync.Mutex
	res.Hist = map[int64]int64{}
	start := time.Now()
	end := start.Add(d)
	seed := time.Now().UnixNano()
	for w := range g {
		wg.Go(func() {
			hist := map[int64]int64{}
			var n, failed, denied int64
			var last error
			// Each goroutine walks the callers one by one from a place
			// of its own, 7919 apart, as BenchmarkRedis's do, and its
			// hot decisions fall on steps of its own. (Walked 7919 at a
			// time from places 7919 apart, goroutine w+1 decided the
			// caller goroutine w had decided a step before, so that
			// decisions of one caller met in a round trip and shared
			// script calls on a cluster: 0.81 calls a decision against
			// 0.95 for callers in turn.)
			i := int(seed%benchmarks.Callers) + w*7919
			for k := 0; ; k++ {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				who := (i + k) % benchmarks.Callers
				if (k+w)%hotEvery == 0 {
					who = benchmarks.Callers // the hot caller
				}
				ok, err := decide(ctx, who)
				hist[bucket(time.Since(t).Microseconds())]++
				n++
				switch {
				case err != nil:
					failed++
					last = err
				case !ok:
					denied++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			res.Decisions += n
			res.Failed += failed
			res.Denied += denied
			if last != nil {
				res.LastErr = last.Error()
			}
			for k, v := range hist {
				res.Hist[k] += v
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// parent runs the cases.
type parent struct {
	procs      []int
	stores     []string
	goroutines int
	duration   time.Duration
	baseline   string
	label      string
	seq        int
}

// row is one case's figures.
type row struct {
	target, store     string
	procs, goroutines int
	perSec, usec, cpu float64 // decisions/s; Redis µs per decision: commandstats, CPU
	calls, p50, p99   float64 // script calls per decision; latency µs
	decisions         int64
}

func (p *parent) run(targets []string, rounds int, out string) error {
	var rows []row
	for _, target := range targets {
		var addrs []string
		var closer io.Closer
		switch target {
		case "redis":
			s, err := redistest.StartServer()
			if err != nil {
				return err
			}
			addrs, closer = []string{s.Addr}, s
		case "cluster":
			c, err := redistest.StartCluster(3)
			if err != nil {
				return err
			}
			addrs, closer = c.Addrs, c
		default:
			return fmt.Errorf("unknown target %q", target)
		}
		all := map[string][]row{}
		var order []string
		for range rounds {
			for _, n := range p.procs {
				for _, store := range p.stores {
					r, err := p.runCase(target, addrs, store, n)
					if err != nil {
						closer.Close()
						return fmt.Errorf("%s, %d processes, %s: %w", target, n, store, err)
					}
					fmt.Fprintf(os.Stderr, "%s\n", r.line())
					k := fmt.Sprintf("%d/%s", n, store)
					if _, ok := all[k]; !ok {
						order = append(order, k)
					}
					all[k] = append(all[k], r)
				}
			}
		}
		closer.Close()
		for _, k := range order {
			rs := all[k]
			slices.SortFunc(rs, func(a, b row) int { return cmp.Compare(a.perSec, b.perSec) })
			rows = append(rows, rs[len(rs)/2])
		}
	}
	table := p.table(rows)
	fmt.Print(table)
	if out != "" {
		return os.WriteFile(out, []byte(table), 0o644)
	}
	return nil
}

// runCase runs store on n processes against addrs.
func (p *parent) runCase(target string, addrs []string, store string, n int) (row, error) {
	p.seq++
	prefix := fmt.Sprintf("fleet-%d-%d-%s:", os.Getpid(), p.seq, store)
	bin, err := os.Executable()
	if err != nil {
		return row{}, err
	}
	name := store
	if strings.HasPrefix(store, "ratescope-") {
		bin, name = p.baseline, "ratescope"
	}
	type proc struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	var ps []proc
	defer func() {
		for _, c := range ps {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	}()
	for range n {
		cmd := exec.Command(bin, "-child", "-store", name, "-addrs", strings.Join(addrs, ","),
			"-cluster="+strconv.FormatBool(target == "cluster"), "-prefix", prefix,
			"-goroutines", strconv.Itoa(p.goroutines), "-duration", p.duration.String())
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return row{}, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return row{}, err
		}
		if err := cmd.Start(); err != nil {
			return row{}, err
		}
		ps = append(ps, proc{cmd, in, bufio.NewReader(stdout)})
	}
	for _, c := range ps {
		line, err := c.out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			return row{}, fmt.Errorf("a process did not get ready: %q %v", line, err)
		}
	}
	before, err := redisFigures(addrs, true)
	if err != nil {
		return row{}, err
	}
	for _, c := range ps {
		if _, err := io.WriteString(c.in, "go\n"); err != nil {
			return row{}, err
		}
	}
	r := row{target: target, store: store, procs: n, goroutines: p.goroutines}
	hist := map[int64]int64{}
	var elapsed time.Duration
	for _, c := range ps {
		var res result
		if err := json.NewDecoder(c.out).Decode(&res); err != nil {
			return row{}, fmt.Errorf("reading a process's result: %w", err)
		}
		if res.Failed > 0 {
			return row{}, fmt.Errorf("%d of %d decisions failed, the last with %s", res.Failed, res.Decisions, res.LastErr)
		}
		if res.Denied > 0 {
			// A denial costs the stores less than a decision that counts.
			return row{}, fmt.Errorf("%d of %d requests denied: the limits must leave room for all", res.Denied, res.Decisions)
		}
		r.decisions += res.Decisions
		elapsed = max(elapsed, res.Elapsed)
		for k, v := range res.Hist {
			hist[k] += v
		}
	}
	after, err := redisFigures(addrs, false)
	if err != nil {
		return row{}, err
	}
	d := float64(r.decisions)
	r.perSec = d / elapsed.Seconds()
	r.usec = (after.usec - before.usec) / d
	r.cpu = (after.cpu - before.cpu) * 1e6 / d
	r.calls = (after.calls - before.calls) / d
	r.p50, r.p99 = percentile(hist, 0.50), percentile(hist, 0.99)
	return r, nil
}

// figures are a Redis's counters, summed over the masters: the usec and
// calls of the decisions' commands (INFO commandstats, without the
// administrative ones), and the CPU time of its processes in seconds.
type figures struct{ usec, calls, cpu float64 }

// admin are the commands of set-up and of this program, left out of a
// decision's Redis time.
var admin = map[string]bool{"info": true, "config|resetstat": true, "config": true, "ping": true, "cluster|slots": true, "cluster|shards": true, "cluster": true, "hello": true, "client|setinfo": true, "client": true, "command": true, "script|load": true, "script": true}

// redisFigures reads the figures of every master, after CONFIG RESETSTAT
// if reset.
func redisFigures(addrs []string, reset bool) (figures, error) {
	var f figures
	ctx := context.Background()
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		if reset {
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				c.Close()
				return f, err
			}
		}
		info, err := c.Info(ctx, "commandstats", "cpu").Result()
		c.Close()
		if err != nil {
			return f, err
		}
		for line := range strings.SplitSeq(info, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
				x, _ := strconv.ParseFloat(v, 64)
				f.cpu += x
			}
			rest, ok := strings.CutPrefix(line, "cmdstat_")
			if !ok {
				continue
			}
			name, fields, _ := strings.Cut(rest, ":")
			if admin[name] {
				continue
			}
			for fv := range strings.SplitSeq(fields, ",") {
				k, v, _ := strings.Cut(fv, "=")
				x, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "usec":
					f.usec += x
				case "calls":
					if name == "evalsha" || name == "eval" {
						f.calls += x
					}
				}
			}
		}
	}
	return f, nil
}

// percentile returns the q-quantile of hist, in µs.
func percentile(hist map[int64]int64, q float64) float64 {
	keys := make([]int64, 0, len(hist))
	var total int64
	for k, v := range hist {
		keys = append(keys, k)
		total += v
	}
	slices.Sort(keys)
	want := int64(math.Ceil(q * float64(total)))
	var seen int64
	for _, k := range keys {
		seen += hist[k]
		if seen >= want {
			return float64(k)
		}
	}
	return 0
}

func (r row) line() string {
	return fmt.Sprintf("%-8s procs=%d g=%d %-20s %9.0f decisions/s  %5.2f redis-µs/op (cmdstats)  %5.2f redis-cpu-µs/op  %.3f calls/op  p50 %6.0fµs  p99 %7.0fµs",
		r.target, r.procs, r.goroutines, r.store, r.perSec, r.usec, r.cpu, r.calls, r.p50, r.p99)
}

// table returns rows as a Markdown table, with each store's decisions/s
// and Redis µs as a multiple of ulule's in the same target and number of
// processes.
func (p *parent) table(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| target | processes × goroutines | store | decisions/s | × ulule | Redis µs/decision (commandstats) | × ulule | Redis CPU µs/decision | script calls/decision | p50 µs | p99 µs |\n")
	fmt.Fprintf(&b, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	ref := map[string]row{}
	for _, r := range rows {
		if r.store == "ulule" {
			ref[fmt.Sprintf("%s/%d/%d", r.target, r.procs, r.goroutines)] = r
		}
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	for _, r := range rows {
		u := ref[fmt.Sprintf("%s/%d/%d", r.target, r.procs, r.goroutines)]
		fmt.Fprintf(&b, "| %s | %d × %d | %s | %.0f | %s | %.2f | %s | %.2f | %.3f | %.0f | %.0f |\n",
			r.target, r.procs, r.goroutines, r.store, r.perSec, ratio(r.perSec, u.perSec), r.usec, ratio(r.usec, u.usec), r.cpu, r.calls, r.p50, r.p99)
	}
	return b.String()
}
