package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/counters"
)

// Config configures a [Store]. Zero fields take the defaults stated on each;
// [New] applies them to a copy.
type Config struct {
	// Client is the Redis client: *redis.Client (one server, or Sentinel
	// through redis.NewFailoverClient), *redis.ClusterClient or
	// *redis.Ring. Required. The store does not close it. Build it with
	// ContextTimeoutEnabled: true so that Timeout also bounds reads and
	// writes on the socket. Without it the store still stops waiting after
	// Timeout, but a command it gave up on keeps its connection until the
	// client's ReadTimeout (3s by default); [Store.CheckStore] warns about it.
	Client redis.UniversalClient

	// Prefix starts every key, so that several applications can share one
	// Redis. It must not contain '{' or '}', which would move the hash
	// tag. Default: "ratescope:".
	Prefix string

	// Timeout bounds how long Redis may take to answer a batch, from the
	// moment it is sent; a batch that another one answered meanwhile does
	// not wait longer for it. A decision queued behind other batches waits
	// as long as its node keeps answering, and is counted; when the node
	// stops answering, every decision waiting for it fails. A sent batch
	// waits Timeout in a process that is not slowed. A process that
	// measures itself lagging (its goroutines wait for a CPU: a burst,
	// CPU-bound work, the garbage collector) would read Redis's answers
	// late, so it waits up to Timeout + 4 × the lag it measured, and at
	// least 4 × Timeout, but never more than 40 × Timeout or 10s,
	// whichever is longer (see the package documentation). The store
	// bounds the wait itself, whatever the client's settings. Default:
	// 50ms.
	Timeout time.Duration

	// MaxBatch is the most decisions sent to Redis in one round trip (one
	// pipeline, in which the Take decisions that may share a script call
	// make one EVALSHA: all of them on one server, those of one hash slot
	// on a cluster; see the package documentation). Decisions asked for
	// while a batch is in flight wait for the next one; a decision that
	// finds no batch in flight is sent at once. 1 turns batching off: each
	// Take then sends its own command from its own goroutine, as a lone
	// command. Default: 64. See the package documentation, Batching.
	MaxBatch int

	// MaxQueue is the most decisions that wait for a batch, per Redis node
	// (each master of a cluster has a queue of its own). A Take that finds
	// the queue full waits for room, for as long as the node keeps
	// answering (backpressure): it is still counted. Default: 4096, 64
	// batches of the default MaxBatch. Unused when MaxBatch is 1.
	MaxQueue int

	// BreakerFailures is how many consecutive failed round trips to one
	// Redis node open that node's circuit breaker. Default: 3.
	BreakerFailures int

	// BreakerBackoff is how long an open breaker fails calls without
	// trying Redis, before it lets one trial call through. Default: 1s.
	BreakerBackoff time.Duration

	// CacheSize is the most denials the over-limit cache remembers, one per
	// blocked caller and scope (a 240-byte map slot plus the key's bytes).
	// Default: 65,536. A negative value turns the cache off.
	CacheSize int

	// Logger receives the breaker's changes of state. Default:
	// slog.Default().
	Logger *slog.Logger

	// RequestClock makes the store count on Request.Now, the limiter's
	// clock, instead of the Redis server's clock (TIME, read inside the
	// script). Default: false, the server's clock: one clock for all the
	// counts of a caller, whatever the clocks of the processes that share
	// them (see the package documentation, Time). Set it for tests with a
	// fake clock, such as the conformance suite.
	RequestClock bool

	// Now is the clock of the breaker's back-off. Default: time.Now.
	// Decisions use the server's clock or Request.Now (see RequestClock);
	// the over-limit cache uses Request.Now.
	Now func() time.Time

	// CacheMaxAge bounds how long the over-limit cache remembers a denial.
	// Default: 0, no bound: until a request of cost 1 would fit again, up
	// to the longest period. [Store.Reset] forgets the denials of the
	// process that calls it, not those of the other processes sharing the
	// Redis; with a bound, a reset frees the caller in every process
	// within it (1s is a good value), and a blocked caller's flood costs
	// Redis one call per bound and process instead of none. Negative:
	// [New] fails.
	CacheMaxAge time.Duration
}

// DefaultConfig returns a Config with every default filled in and no Client.
func DefaultConfig() Config {
	return Config{
		Prefix:          "ratescope:",
		Timeout:         50 * time.Millisecond,
		MaxBatch:        64,
		MaxQueue:        4096,
		BreakerFailures: 3,
		BreakerBackoff:  time.Second,
		CacheSize:       1 << 16,
		Logger:          slog.Default(),
		Now:             time.Now,
	}
}

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Prefix == "" {
		c.Prefix = d.Prefix
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = d.MaxBatch
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = d.MaxQueue
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = d.BreakerFailures
	}
	if c.BreakerBackoff == 0 {
		c.BreakerBackoff = d.BreakerBackoff
	}
	if c.CacheSize == 0 {
		c.CacheSize = d.CacheSize
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.Now == nil {
		c.Now = d.Now
	}
	return c
}

// Validate reports every problem with c, joined: a missing Client, a Prefix
// with a brace, a negative Timeout, MaxBatch, MaxQueue, BreakerFailures or
// BreakerBackoff, a negative CacheMaxAge.
func (c Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("redisstore: no Client: pass a redis.UniversalClient"))
	}
	if strings.ContainsAny(c.Prefix, "{}") {
		errs = append(errs, fmt.Errorf("redisstore: Prefix %q: must not contain '{' or '}', which would move the hash tag; use other characters, such as ':'", c.Prefix))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("redisstore: Timeout %s: must not be negative; leave it 0 for the default", c.Timeout))
	}
	if c.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("redisstore: MaxBatch %d: must not be negative; leave it 0 for the default", c.MaxBatch))
	}
	if c.MaxQueue < 0 {
		errs = append(errs, fmt.Errorf("redisstore: MaxQueue %d: must not be negative; leave it 0 for the default", c.MaxQueue))
	}
	if c.BreakerFailures < 0 {
		errs = append(errs, fmt.Errorf("redisstore: BreakerFailures %d: must not be negative; leave it 0 for the default", c.BreakerFailures))
	}
	if c.BreakerBackoff < 0 {
		errs = append(errs, fmt.Errorf("redisstore: BreakerBackoff %s: must not be negative; leave it 0 for the default", c.BreakerBackoff))
	}
	if c.CacheMaxAge < 0 {
		errs = append(errs, fmt.Errorf("redisstore: CacheMaxAge %s: must not be negative; leave it 0 for no bound", c.CacheMaxAge))
	}
	return errors.Join(errs...)
}

// ErrUnavailable is the error [Store.Take] returns while the circuit breaker
// of the caller's Redis node is open: the store did not call Redis. Test for
// it with errors.Is; the error returned also matches [core.ErrNotSent], so
// that a give-back it refused may be made again. The error returned also has a RetryAfter method
// ([core.RetryAfterError]) that returns Config.BreakerBackoff, so that a
// scope that fails closed tells its callers to wait that long.
var ErrUnavailable = errors.New("redisstore: unavailable: circuit breaker open")

// unavailableError is [ErrUnavailable] with the breaker's back-off: the
// error Take and Charge return while a breaker is open. Each breaker makes
// one, so that failing fast allocates nothing.
type unavailableError struct{ backoff time.Duration }

func (e *unavailableError) Error() string { return ErrUnavailable.Error() }

// Is reports whether target is ErrUnavailable or [core.ErrNotSent]: the
// store sent nothing to Redis.
func (e *unavailableError) Is(target error) bool {
	return target == ErrUnavailable || target == core.ErrNotSent
}

// RetryAfter returns the breaker's back-off.
func (e *unavailableError) RetryAfter() time.Duration { return e.backoff }

// Store is a [core.Store] that keeps counts in Redis, shared by every
// process that uses the same Redis and Prefix. Build it with [New]. It is
// safe for concurrent use. It sends the decisions of concurrent Takes
// together (see Batching in the package documentation) from goroutines that
// run while decisions are waiting and for 100ms after, so an idle Store
// soon runs no goroutine and needs no Close.
type Store struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
	batched bool     // MaxBatch > 1
	cache   *denials // nil when turned off
	clock   bool     // count on Request.Now (Config.RequestClock)
	nodes   nodes
	stats   tally
	gather  int         // see node.gather: tests only
	pinged  atomic.Bool // Ping succeeded once: Redis is reachable (see late)
}

// maxSenders is how many batches a Store keeps in flight at most, per
// node. Two let the client write and read one batch while Redis runs the
// other.
const maxSenders = 2

// New returns a Store for cfg, or the errors of [Config.Validate] (after
// defaults). It does not contact Redis: see [Store.Ping] and [Store.CheckStore].
func New(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		client:  cfg.Client,
		prefix:  cfg.Prefix,
		timeout: cfg.Timeout,
		batched: cfg.MaxBatch > 1,
		clock:   cfg.RequestClock,
	}
	if cfg.CacheSize > 0 {
		s.cache = newDenials(cfg.CacheSize)
		s.cache.maxAge = int64(cfg.CacheMaxAge / time.Microsecond)
	}
	s.nodes.newNode = func(addr string, client redis.UniversalClient) *node {
		return &node{
			addr:     addr,
			client:   client,
			fallback: cfg.Client,
			by:       groupingOf(cfg.Client),
			max:      cfg.MaxBatch,
			senders:  maxSenders,
			gather:   s.gather,
			timeout:  cfg.Timeout,
			breaker:  breaker{node: addr, failures: cfg.BreakerFailures, backoff: cfg.BreakerBackoff, now: cfg.Now, log: cfg.Logger, openErr: &unavailableError{backoff: cfg.BreakerBackoff}},
			counters: &s.stats,
			answered: s.nodes.answered,
			room:     make(chan struct{}, cfg.MaxQueue),
			wake:     make(chan struct{}, 1),
			workers:  workers{jobs: make(chan func())},
			flushed:  make(chan struct{}),
		}
	}
	s.nodes.cluster, _ = cfg.Client.(*redis.ClusterClient)
	s.nodes.all = s.nodes.newNode("", cfg.Client)
	return s, nil
}

// contextTimeouts reports whether c lets context deadlines bound socket I/O,
// as far as can be told.
func contextTimeouts(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}

// serverClock is the time sent to a script to have it read the Redis
// server's clock (TIME) instead: the default, unless Config.RequestClock.
// The scripts read any negative time so.
const serverClock = -1

// scriptNow returns the time to send a script for a request at now: its
// microseconds since the Unix epoch with Config.RequestClock, and
// [serverClock] otherwise.
func (s *Store) scriptNow(now time.Time) int64 {
	if s.clock {
		return max(now.UnixMicro(), 0)
	}
	return serverClock
}

// admit returns ErrUnavailable while the breaker of node nd is open, and
// counts a call otherwise: what Take and Charge do before they build their
// call.
func (s *Store) admit(nd *node) error {
	if !nd.breaker.allow() {
		s.stats.failedFast.Add(1)
		return nd.breaker.openErr
	}
	s.stats.calls.Add(1)
	return nil
}

// run runs c on node nd, in a batch or alone, and reads the script's
// answer, a list of integers no longer than out, into out; it returns
// their number. It releases c unless the caller left before the answer or
// c is lost.
func (s *Store) run(ctx context.Context, nd *node, c *call, out []int64) (int, error) {
	if s.batched {
		c.ctx = ctx
		if err := nd.do(ctx, c); err != nil {
			return 0, err // the caller left: the sender may still hold c
		}
	} else {
		nd.doAlone(ctx, c)
	}
	defer c.release()
	if err := c.failure(); err != nil {
		return 0, err
	}
	vals, ok := c.val.([]any)
	if !ok {
		return 0, fmt.Errorf("script returned %T, want a list", c.val)
	}
	if len(vals) > len(out) {
		return 0, fmt.Errorf("script returned %d values, want at most %d", len(vals), len(out))
	}
	for i, v := range vals {
		n, ok := v.(int64)
		if !ok {
			return 0, fmt.Errorf("script returned %T, want integers", v)
		}
		out[i] = n
	}
	return len(vals), nil
}

// Shared reports that counts are shared by every process using the same
// Redis and Prefix: it returns true. The startup checks read it.
func (s *Store) Shared() bool { return true }

// Ping reports whether Redis answers PING: every master of a cluster, the
// server otherwise. It waits at most 4 × Config.Timeout (200ms by default),
// or until ctx ends if that is sooner, whatever the client's settings, and
// sends PING once, without the client's retries, so that a process that
// starts while Redis is down is not held up: its requests are allowed
// uncounted until Redis answers. It neither consults nor changes the
// circuit breaker.
func (s *Store) Ping(ctx context.Context) error {
	bound := 4 * s.timeout
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.ping(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = fmt.Errorf("no answer within %s: %w", bound, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("redisstore: ping: %w", err)
	}
	s.pinged.Store(true)
	s.nodes.answered()
	return nil
}

// ping sends PING once to every master of a cluster, or to the client.
func (s *Store) ping(ctx context.Context) error {
	send := func(ctx context.Context, c redis.UniversalClient) error {
		cmd := redis.NewCmd(ctx, "ping")
		_ = c.Process(ctx, once{cmd})
		return cmd.Err()
	}
	if c, ok := s.client.(*redis.ClusterClient); ok {
		return c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return send(ctx, n)
		})
	}
	return send(ctx, s.client)
}

// Stats returns what the store did since [New], as [counters.Redis]
// counts it; the metrics modules' Watch reads it at each scrape.
// It is safe to call concurrently with Take; the counters are read one by
// one, not as one snapshot.
func (s *Store) Stats() counters.Redis {
	st := counters.Redis{
		Calls:      s.stats.calls.Load(),
		Commands:   s.stats.commands.Load(),
		RoundTrips: s.stats.trips.Load(),
		Failures:   s.stats.failures.Load(),
		Waited:     s.stats.waited.Load(),
		FailedFast: s.stats.failedFast.Load(),
		CacheHits:  s.stats.cacheHits.Load(),
	}
	s.nodes.each(func(n *node) {
		st.Nodes++
		st.BreakerOpens += n.breaker.opens.Load()
		if n.breaker.state.Load() != closed {
			st.OpenNodes++
		}
	})
	st.BreakerOpen = st.OpenNodes > 0
	if s.cache != nil {
		st.Cached = s.cache.len()
	}
	return st
}
