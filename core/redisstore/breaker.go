package redisstore

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Breaker states.
const (
	closed  int32 = iota // calls go to Redis
	open                 // calls fail fast until the back-off has passed
	probing              // one trial call is in flight; others fail fast
)

// openLogInterval is the least time between two logged openings of the
// breaker; the next logged one says how many were left out.
const openLogInterval = 10 * time.Second

// breaker is a circuit breaker: after failures consecutive failed calls it
// opens for backoff, then lets one trial call through and closes if it
// succeeds, or opens again if it fails. Each Redis node of a store has its
// own (see node).
type breaker struct {
	node     string // the node's address in logs; "" for a store's only node
	failures int
	backoff  time.Duration
	now      func() time.Time
	log      *slog.Logger
	openErr  error // the error of a call refused while open: ErrUnavailable and backoff

	state       atomic.Int32 // read without mu on the fast path
	consecutive atomic.Int64 // consecutive failures, read without mu
	opens       atomic.Int64

	mu          sync.Mutex
	openedAt    time.Time
	lastOpenLog time.Time
	openLogged  bool // the current opening was logged, so its closing is
	suppressed  int  // openings not logged since the last logged one
}

// closed reports whether the breaker is closed: Redis answered the last
// calls, or too few failed in a row to open it. It changes nothing.
func (b *breaker) closed() bool {
	return b.state.Load() == closed
}

// allow reports whether a call may go to Redis now.
func (b *breaker) allow() bool {
	if b.state.Load() == closed {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state.Load() {
	case closed:
		return true
	case open:
		if b.now().Sub(b.openedAt) >= b.backoff {
			b.state.Store(probing)
			return true
		}
	}
	return false
}

// succeeded records a call that Redis answered.
func (b *breaker) succeeded() {
	if b.state.Load() == closed && b.consecutive.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consecutive.Store(0)
	if b.state.Load() == closed {
		return
	}
	b.state.Store(closed)
	if b.openLogged {
		b.log.Info("redisstore: circuit closed: Redis answers again, decisions are counted", b.nodeAttr())
	}
}

// failed records a call that Redis did not answer. It reports whether the
// breaker opened.
func (b *breaker) failed(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.consecutive.Add(1)
	switch b.state.Load() {
	case closed:
		if n < int64(b.failures) {
			return false
		}
	case open:
		return false // a call let through before the breaker opened
	}
	now := b.now()
	b.state.Store(open)
	b.openedAt = now
	b.opens.Add(1)
	b.openLogged = b.lastOpenLog.IsZero() || now.Sub(b.lastOpenLog) >= openLogInterval
	if !b.openLogged {
		b.suppressed++
		return true
	}
	b.log.Warn("redisstore: circuit open: Redis is not called, requests are decided as their scope fails (served uncounted, refused, or decided in memory)",
		b.nodeAttr(),
		slog.Int64("consecutive_failures", n),
		slog.Duration("backoff", b.backoff),
		slog.Int("openings_not_logged", b.suppressed),
		slog.Any("error", err))
	b.lastOpenLog = now
	b.suppressed = 0
	return true
}

// nodeAttr names the breaker's node in logs.
func (b *breaker) nodeAttr() slog.Attr {
	if b.node == "" {
		return slog.Attr{}
	}
	return slog.String("node", b.node)
}

// abandoned records a call whose caller gave up before Redis answered: it
// says nothing about Redis. A trial call so abandoned makes room for another.
func (b *breaker) abandoned() {
	if b.state.Load() != probing {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() == probing {
		b.state.Store(open)
	}
}
