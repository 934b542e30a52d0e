package redisstore

import (
	"math"
	"runtime"
	"runtime/metrics"
	"time"
)

// lag measures how far behind the process runs: how long a goroutine that
// is ready to run waits for a CPU. The goroutine that reads Redis's answer
// is woken by the network and waits its turn like any other, so an answer
// that Redis sent in time is read that much later (ADR 0007). One lag
// belongs to one wait (await): it keeps the scheduler's counts of the
// previous reading, so that the next one sees only what happened since.
//
// Three measures, the worst of which is the lag:
//
//   - the time a yield took: runtime.Gosched puts the goroutine at the back
//     of the global run queue, behind the goroutines waiting there (those
//     preempted after their 10ms slice, the CPU-bound ones among them);
//   - the longest wait for a CPU the runtime recorded
//     (/sched/latencies:seconds, a sample of the goroutines that started
//     running) since the previous reading: the backlog of a burst of
//     goroutines woken by channels and the network;
//   - how late the caller's own timer fired: the whole process descheduled
//     by the operating system, stopped by the garbage collector, slowed by
//     the machine.
type lag struct {
	samples [2]metrics.Sample
	counts  []uint64 // the histogram's counts at the previous reading
	read    bool
}

// measure yields once and returns the process's lag now (late is how late
// the caller's timer fired), and whether it has a run-queue backlog: more
// goroutines ready to run than four per CPU.
func (l *lag) measure(late time.Duration) (time.Duration, bool) {
	start := time.Now()
	runtime.Gosched()
	worst := max(late, time.Since(start))
	l.samples[0].Name = "/sched/latencies:seconds"
	l.samples[1].Name = "/sched/goroutines/runnable:goroutines"
	metrics.Read(l.samples[:])
	if l.samples[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := l.samples[0].Value.Float64Histogram()
		if l.read && len(l.counts) == len(h.Counts) {
			worst = max(worst, longest(h, l.counts))
		}
		l.counts = append(l.counts[:0], h.Counts...)
		l.read = true
	}
	backlog := l.samples[1].Value.Kind() == metrics.KindUint64 &&
		l.samples[1].Value.Uint64() > uint64(4*runtime.GOMAXPROCS(0))
	return worst, backlog
}

// longest returns the upper bound of the highest bucket of h whose count
// grew since before: the longest wait recorded since, rounded up.
func longest(h *metrics.Float64Histogram, before []uint64) time.Duration {
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] == before[i] {
			continue
		}
		upper := h.Buckets[i+1]
		if math.IsInf(upper, 1) {
			upper = h.Buckets[i]
		}
		return time.Duration(upper * float64(time.Second))
	}
	return 0
}
