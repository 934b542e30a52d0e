package core

import (
	"sync"
	"sync/atomic"
	"time"
)

// rateLog lets through at most one log record per interval, and counts
// those left out since the last one, so that a dead store or a shadow
// scope over its limit does not flood the log. Leaving a record out takes
// two atomic operations and no lock, as it happens on every request of a
// caller over its limit in shadow mode.
type rateLog struct {
	every time.Duration
	mu    sync.Mutex   // held to let a record through
	next  atomic.Int64 // Unix nanoseconds before which records are left out
	quiet atomic.Int64
}

// allow reports whether to log a record at now and, if so, how many were
// left out since the last.
func (e *rateLog) allow(now time.Time) (suppressed int64, ok bool) {
	t := now.UnixNano()
	if t < e.next.Load() {
		e.quiet.Add(1)
		return 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t < e.next.Load() {
		e.quiet.Add(1)
		return 0, false
	}
	e.next.Store(t + int64(e.every))
	return e.quiet.Swap(0), true
}
