package redisstore_test

import (
	"crypto/sha256"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// bound is the longest a decision may wait for a Redis that does not answer,
// as documented (ADR 0007): the store's ceiling, 40 × timeout and at least
// 10s, then a few seconds for the caller's own turn in a process that lags
// by seconds. About timeout when the process is not slowed
// (TestQuietProcessGivesUp).
func bound(timeout time.Duration) time.Duration {
	return max(40*timeout, 10*time.Second) + 5*time.Second
}

// spin starts n goroutines that only burn CPU, as an attacker's load or a
// busy neighbour within the process would, until the returned stop is
// called. Go preempts them every 10ms or so: with GOMAXPROCS 1, a goroutine
// woken by the network waits its turn behind them.
func spin(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := uint64(1)
			for !done.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		})
	}
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// work is a fixed amount of CPU work: hashing 16 MiB (tens of
// milliseconds, several of the scheduler's 10ms slices).
func work() time.Duration {
	buf := make([]byte, 1<<20)
	start := time.Now()
	for range 16 {
		h := sha256.Sum256(buf)
		buf[0] = h[0]
	}
	runtime.KeepAlive(buf)
	return time.Since(start)
}

// slowdown reports how many times longer work takes with busy goroutines
// spinning than without (the median of three runs each).
func slowdown(busy int) float64 {
	median := func() time.Duration {
		d := []time.Duration{work(), work(), work()}
		slices.Sort(d)
		return d[1]
	}
	alone := median()
	stop := spin(busy)
	loaded := median()
	stop()
	return float64(loaded) / float64(alone)
}
