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
	"github.com/ratescope/ratescope/internal/window"
)

// Config configures a [Store]. Zero fields take the defaults stated on each;
// [New] applies them to a copy.
type Config struct {
	// Client is the Redis client: *redis.Client (one server, or Sentinel
	// through redis.NewFailoverClient), *redis.ClusterClient or
	// *redis.Ring. Required. The store does not close it. Build it with
	// ContextTimeoutEnabled: true so that Timeout also bounds reads and
	// writes on the socket; otherwise its ReadTimeout and WriteTimeout (3s
	// by default) do, and New logs a warning.
	Client redis.UniversalClient

	// Prefix starts every key, so that several applications can share one
	// Redis. It must not contain '{' or '}', which would move the hash
	// tag. Default: "ratescope:".
	Prefix string

	// Timeout bounds each call to Redis. Default: 50ms.
	Timeout time.Duration

	// BreakerFailures is how many consecutive failed calls open the circuit
	// breaker. Default: 3.
	BreakerFailures int

	// BreakerBackoff is how long an open breaker fails calls without
	// trying Redis, before it lets one trial call through. Default: 1s.
	BreakerBackoff time.Duration

	// CacheSize is the most denials the over-limit cache remembers, one per
	// blocked caller and scope (a few hundred bytes each with the key).
	// Default: 65,536. A negative value turns the cache off.
	CacheSize int

	// Logger receives the breaker's changes of state. Default:
	// slog.Default().
	Logger *slog.Logger

	// Now is the clock of the breaker's back-off. Default: time.Now.
	// Decisions and the over-limit cache use Request.Now instead.
	Now func() time.Time
}

// DefaultConfig returns a Config with every default filled in and no Client.
func DefaultConfig() Config {
	return Config{
		Prefix:          "ratescope:",
		Timeout:         50 * time.Millisecond,
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
// with a brace, a negative Timeout, BreakerFailures or BreakerBackoff.
func (c Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("redisstore: no Client: pass a redis.UniversalClient"))
	}
	if strings.ContainsAny(c.Prefix, "{}") {
		errs = append(errs, fmt.Errorf("redisstore: Prefix %q: must not contain '{' or '}'", c.Prefix))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("redisstore: Timeout %s: must not be negative", c.Timeout))
	}
	if c.BreakerFailures < 0 {
		errs = append(errs, fmt.Errorf("redisstore: BreakerFailures %d: must not be negative", c.BreakerFailures))
	}
	if c.BreakerBackoff < 0 {
		errs = append(errs, fmt.Errorf("redisstore: BreakerBackoff %s: must not be negative", c.BreakerBackoff))
	}
	return errors.Join(errs...)
}

// ErrUnavailable is the error [Store.Take] returns while the circuit breaker
// is open: the store did not call Redis. Test for it with errors.Is.
var ErrUnavailable = errors.New("redisstore: unavailable: circuit breaker open")

// Store is a [core.Store] that keeps counts in Redis, shared by every
// process that uses the same Redis and Prefix. Build it with [New]. It is
// safe for concurrent use and starts no goroutine, so it needs no Close.
type Store struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
	breaker breaker
	cache   *denials // nil when turned off

	calls      atomic.Int64
	failures   atomic.Int64
	failedFast atomic.Int64
	cacheHits  atomic.Int64
}

// New returns a Store for cfg, or the errors of [Config.Validate] (after
// defaults). It does not contact Redis: see [Store.Ping].
func New(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		client:  cfg.Client,
		prefix:  cfg.Prefix,
		timeout: cfg.Timeout,
		breaker: breaker{failures: cfg.BreakerFailures, backoff: cfg.BreakerBackoff, now: cfg.Now, log: cfg.Logger},
	}
	if cfg.CacheSize > 0 {
		s.cache = newDenials(cfg.CacheSize)
	}
	if !contextTimeouts(cfg.Client) {
		cfg.Logger.Warn("redisstore: the Redis client ignores context deadlines: Timeout does not bound socket reads and writes; build the client with ContextTimeoutEnabled: true",
			slog.Duration("timeout", cfg.Timeout))
	}
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

// Take implements [core.Store] in one round trip to Redis (see the package
// documentation). It returns [ErrUnavailable] while the breaker is open, a wrapped Redis or context error if Redis does not
// answer within Timeout, and an error for a request no [core.Limiter]
// builds (no limits, more than [core.MaxLimits], a cost below 1, a period
// that is not a positive multiple of 4µs).
func (s *Store) Take(ctx context.Context, req core.Request) (core.Result, error) {
	if err := checkRequest(&req); err != nil {
		return core.Result{}, err
	}
	now := max(req.Now.UnixMicro(), 0)
	var buf [128]byte
	key := string(appendKey(buf[:0], s.prefix, &req))

	var ck cacheKey
	if s.cache != nil {
		ck.key = key
		for i, r := range req.Limits {
			ck.limits[i] = r.Limit
		}
		if res, ok := s.cache.lookup(&ck, now, req.Cost); ok {
			s.cacheHits.Add(1)
			return res, nil
		}
	}

	if !s.breaker.allow() {
		s.failedFast.Add(1)
		return core.Result{}, ErrUnavailable
	}
	args := make([]any, 2, 2+2*len(req.Limits))
	args[0], args[1] = now, req.Cost
	for _, r := range req.Limits {
		args = append(args, window.Width(r.Period)/int64(time.Microsecond), r.Limit)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	s.calls.Add(1)
	out, err := takeScript.Run(callCtx, s.client, []string{key}, args...).Int64Slice()
	cancel()
	if err == nil && len(out) != 1+3*len(req.Limits) {
		err = fmt.Errorf("script returned %d values, want %d", len(out), 1+3*len(req.Limits))
	}
	if err != nil {
		if ctx.Err() != nil {
			s.breaker.abandoned()
		} else {
			s.failures.Add(1)
			s.breaker.failed(err)
		}
		return core.Result{}, fmt.Errorf("redisstore: take: %w", err)
	}
	s.breaker.succeeded()

	res := core.Result{Allowed: out[0] == 1}
	for i, r := range req.Limits {
		v := out[1+3*i:]
		res.Limits[i] = core.LimitStatus{
			Rate:       r,
			Remaining:  v[0],
			Reset:      time.Duration(v[1]) * time.Microsecond,
			RetryAfter: time.Duration(v[2]) * time.Microsecond,
		}
	}
	if !res.Allowed && s.cache != nil {
		s.cache.remember(&ck, now, req.Cost, &res)
	}
	return res, nil
}

// Shared reports that counts are shared by every process using the same
// Redis and Prefix: it returns true. The startup checks read it.
func (s *Store) Shared() bool { return true }

// Ping reports whether Redis answers PING within ctx: every master of a
// cluster, the server otherwise. It neither consults nor changes the
// circuit breaker.
func (s *Store) Ping(ctx context.Context) error {
	var err error
	if c, ok := s.client.(*redis.ClusterClient); ok {
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		})
	} else {
		err = s.client.Ping(ctx).Err()
	}
	if err != nil {
		return fmt.Errorf("redisstore: ping: %w", err)
	}
	return nil
}

// Stats counts what a [Store] did since [New].
type Stats struct {
	// Calls is the number of decisions sent to Redis, one round trip each.
	Calls int64
	// Failures is the number of Calls that failed, a caller's own
	// cancellation aside.
	Failures int64
	// BreakerOpens is how many times the circuit breaker opened.
	BreakerOpens int64
	// FailedFast is the number of decisions refused with [ErrUnavailable]
	// without calling Redis.
	FailedFast int64
	// CacheHits is the number of denials answered by the over-limit cache
	// without calling Redis.
	CacheHits int64
	// Cached is the number of denials the over-limit cache holds now.
	Cached int
	// BreakerOpen reports whether the breaker is open now (or trying
	// Redis again).
	BreakerOpen bool
}

// Stats returns the store's counters. It is safe to call concurrently with
// Take; the counters are read one by one, not as one snapshot.
func (s *Store) Stats() Stats {
	st := Stats{
		Calls:        s.calls.Load(),
		Failures:     s.failures.Load(),
		BreakerOpens: s.breaker.opens.Load(),
		FailedFast:   s.failedFast.Load(),
		CacheHits:    s.cacheHits.Load(),
		BreakerOpen:  s.breaker.state.Load() != closed,
	}
	if s.cache != nil {
		st.Cached = s.cache.len()
	}
	return st
}
