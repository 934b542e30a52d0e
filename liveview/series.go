package liveview

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/ratescope/ratescope/core"
)

// seconds is the span of the per-second series: the last 15 minutes.
const seconds = 900

// A ring counts events per second over the last [seconds] seconds. Each
// slot holds, in one word, the second it counts (its low 32 bits) above
// the count (below), so that a slot left from an earlier turn of the ring
// is recognised and restarted by the same compare-and-swap that counts:
// counting takes no lock and allocates nothing.
type ring [seconds]atomic.Uint64

// add counts one event in second sec (Unix time).
func (r *ring) add(sec int64) {
	slot := &r[index(sec)]
	stamp := uint64(uint32(sec)) << 32
	for {
		old := slot.Load()
		n := stamp | 1
		if old&^0xffffffff == stamp {
			if uint32(old) == 0xffffffff {
				return // 4 billion events in a second: keep the count
			}
			n = old + 1
		}
		if slot.CompareAndSwap(old, n) {
			return
		}
	}
}

// read returns the counts of the [seconds] seconds that end with second
// now, the oldest first, and their sum.
func (r *ring) read(now int64) ([]int64, int64) {
	out := make([]int64, seconds)
	var sum int64
	for i := range out {
		sec := now - seconds + 1 + int64(i)
		v := r[index(sec)].Load()
		if v>>32 == uint64(uint32(sec)) {
			out[i] = int64(uint32(v))
			sum += out[i]
		}
	}
	return out, sum
}

// index returns the slot of second sec.
func index(sec int64) int {
	return int((sec%seconds + seconds) % seconds)
}

// outcomes are the outcomes drawn, in the order drawn; a reset decides no
// request and has no series.
var outcomes = [...]core.Outcome{core.OutcomeAllowed, core.OutcomeDenied, core.OutcomeExempt, core.OutcomeShadow, core.OutcomeFailedOpen, core.OutcomeLocal, core.OutcomeFailedClosed}

// maxOutcome bounds the Outcome values counted.
const maxOutcome = core.OutcomeLocal + 1

// scopeSeries are the rings of one scope, by kind of caller and outcome.
type scopeSeries struct {
	rings [2][maxOutcome]ring
	// seen records, by kind, whether any event was counted, so that a
	// scope's page shows only the kinds it has seen.
	seen [2]atomic.Bool
}

// A registry finds the series of a scope without a lock: scopes are few
// and known early, so a new one copies the map (under mu) and every
// lookup reads the current map.
type registry struct {
	mu     sync.Mutex
	scopes atomic.Pointer[map[string]*scopeSeries]
}

// get returns the series of scope, made on its first event.
func (g *registry) get(scope string) *scopeSeries {
	if s, ok := g.all()[scope]; ok {
		return s
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.all()
	if s, ok := old[scope]; ok {
		return s
	}
	m := make(map[string]*scopeSeries, len(old)+1)
	maps.Copy(m, old)
	s := &scopeSeries{}
	m[scope] = s
	g.scopes.Store(&m)
	return s
}

// all returns the current map of scopes (nil before any event).
func (g *registry) all() map[string]*scopeSeries {
	if m := g.scopes.Load(); m != nil {
		return *m
	}
	return nil
}
