package storetest

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/window"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// This file holds the cases that check what a caller is promised: a client
// pacing itself below the rate is never refused, one that bursts and obeys
// Retry-After gets nearly what an exact log would give it, every wait is at
// most the period and enough, and a step of the clock or a client hanging
// up locks no one out and fails nothing.

const week = 7 * 24 * time.Hour

// entry is one admitted request of an exact log or a model.
type entry struct {
	at   time.Time
	cost int64
}

// exactLog is an exact sliding log: a request is admitted if every limit's
// units admitted in the last period plus its cost are at most the limit. It
// is the reference the stores' throughput is measured against.
type exactLog struct {
	limits []core.Rate
	log    []entry // oldest first
}

// take decides a request of cost at now and, if it is refused, returns the
// exact wait until it would fit.
func (l *exactLog) take(now time.Time, cost int64) (bool, time.Duration) {
	if wait := l.wait(now, cost); wait > 0 {
		return false, wait
	}
	l.add(now, cost)
	return true, 0
}

// wait returns how long after now a request of cost must wait until every
// limit has room for it: 0 if they have room now.
func (l *exactLog) wait(now time.Time, cost int64) time.Duration {
	var longest time.Duration
	for _, r := range l.limits {
		longest = max(longest, r.Period)
	}
	for len(l.log) > 0 && !now.Before(l.log[0].at.Add(longest)) {
		l.log = l.log[1:]
	}
	var wait time.Duration
	for _, r := range l.limits {
		first, sum := l.window(now, r)
		for k := first; sum+cost > r.Limit; k++ {
			sum -= l.log[k].cost
			wait = max(wait, l.log[k].at.Add(r.Period).Sub(now))
		}
	}
	return wait
}

// window returns the index of the first entry in r's window at now, and the
// units of the window.
func (l *exactLog) window(now time.Time, r core.Rate) (int, int64) {
	first := len(l.log)
	var sum int64
	for k := len(l.log) - 1; k >= 0 && now.Before(l.log[k].at.Add(r.Period)); k-- {
		first = k
		sum += l.log[k].cost
	}
	return first, sum
}

// add records a request of cost admitted at now.
func (l *exactLog) add(now time.Time, cost int64) {
	l.log = append(l.log, entry{now, cost})
}

// burstAndObey plays a client that sends requests of cost 1 at one instant
// until one is refused, then waits exactly the Retry-After it was given,
// sending nothing, and starts again, from start until span has passed or it
// got units requests admitted. It returns how many were admitted and when
// the last of them was, after start.
func burstAndObey(t *testing.T, start time.Time, span time.Duration, units int, take func(time.Time) (bool, time.Duration)) (int, time.Duration) {
	t.Helper()
	n := 0
	var last time.Duration
	for now := start; now.Before(start.Add(span)) && n < units; {
		ok, wait := take(now)
		if ok {
			n++
			last = now.Sub(start)
			continue
		}
		require.Positive(t, wait, "a refusal at %s says how long to wait", now.Sub(start))
		now = now.Add(wait)
	}
	return n, last
}

// offset returns a time after Start by a random whole number of
// microseconds below d, so that a schedule does not start on a bucket
// boundary.
func offset(rng *rand.Rand, d time.Duration) time.Time {
	return Start.Add(time.Duration(rng.Int64N(int64(d/time.Microsecond))) * time.Microsecond)
}

func testPacing(t *testing.T, s core.Store) {
	day := core.PerDay(1000)
	for _, tc := range []struct {
		name   string
		limits []core.Rate
		share  float64 // of the first limit's rate
		span   time.Duration
	}{
		{name: "60/min at 95%", limits: []core.Rate{core.PerMinute(60)}, share: 0.95, span: time.Hour},
		{name: "60/min at 90%", limits: []core.Rate{core.PerMinute(60)}, share: 0.90, span: time.Hour},
		{name: "3/min at 95%", limits: []core.Rate{core.PerMinute(3)}, share: 0.95, span: time.Hour},
		{name: "5/2s at 95%", limits: []core.Rate{{Limit: 5, Period: 2 * time.Second}}, share: 0.95, span: 10 * time.Minute},
		{name: "1000/day at 95%", limits: []core.Rate{day}, share: 0.95, span: week},
		{name: "20/day at 95%", limits: []core.Rate{core.PerDay(20)}, share: 0.95, span: week},
		{name: "1000/day and 60/min at 95% of the day", limits: []core.Rate{day, core.PerMinute(60)}, share: 0.95, span: week},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.limits[0]
			// The interval between requests, rounded up to whole
			// microseconds: a rate of at most share of the limit.
			every := time.Duration(math.Ceil(float64(r.Period)/(tc.share*float64(r.Limit))/1e3)) * time.Microsecond
			c := newCaller(t, s, tc.limits...)
			start := offset(rand.New(rand.NewPCG(5, uint64(r.Limit))), r.Period)
			n := 0
			for c.now = start; c.now.Before(start.Add(tc.span)); c.now = c.now.Add(every) {
				res := c.take(1)
				require.True(t, res.Allowed, "request %d, %s after the start, one every %s: never refused", n+1, c.now.Sub(start), every)
				n++
			}
			t.Logf("%d requests, one every %s, none refused", n, every)
		})
	}
}

func testBurstAndObey(t *testing.T, s core.Store) {
	for _, tc := range []struct {
		name   string
		limits []core.Rate
		span   time.Duration
	}{
		{name: "60/min", limits: []core.Rate{core.PerMinute(60)}, span: time.Hour},
		{name: "5/2s", limits: []core.Rate{{Limit: 5, Period: 2 * time.Second}}, span: 20 * time.Minute},
		{name: "1000/day", limits: []core.Rate{core.PerDay(1000)}, span: week},
		{name: "60/min and 1000/day", limits: []core.Rate{core.PerMinute(60), core.PerDay(1000)}, span: week},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := offset(rand.New(rand.NewPCG(6, uint64(len(tc.name)))), tc.limits[len(tc.limits)-1].Period)
			exact := &exactLog{limits: tc.limits}
			want, wantTime := burstAndObey(t, start, tc.span, math.MaxInt, func(now time.Time) (bool, time.Duration) {
				return exact.take(now, 1)
			})
			c := newCaller(t, s, tc.limits...)
			take := func(now time.Time) (bool, time.Duration) {
				c.now = now
				res := c.take(1)
				return res.Allowed, retryAfter(res)
			}
			got, _ := burstAndObey(t, start, tc.span, math.MaxInt, take)
			t.Logf("admitted %d in %s, an exact log %d: %.2f%%", got, tc.span, want, 100*float64(got)/float64(want))
			assert.GreaterOrEqual(t, float64(got), 0.98*float64(want), "at least 98%% of what an exact log admits")
			assert.LessOrEqual(t, got, want, "never more than an exact log")

			// The same number of units, however long it takes: the rate
			// at which the client is served, free of where the span ends.
			c = newCaller(t, s, tc.limits...)
			n, gotTime := burstAndObey(t, start, 2*tc.span, want, take)
			require.Equal(t, want, n)
			t.Logf("%d units in %s, an exact log in %s: %.2f%% of its rate", n, gotTime, wantTime, 100*wantTime.Seconds()/gotTime.Seconds())
			assert.GreaterOrEqual(t, wantTime.Seconds(), 0.98*gotTime.Seconds(), "served at 98%% of an exact log's rate at least")
		})
	}
}

// testEdges bursts at and around bucket and window boundaries: a burst
// waits exactly one period, and a wait is exact to the microsecond.
func testEdges(t *testing.T, s core.Store) {
	for _, r := range []core.Rate{{Limit: 5, Period: 2 * time.Second}, core.PerMinute(5), core.PerDay(5)} {
		width := time.Duration(window.Width(r.Period))
		for _, edge := range []time.Duration{r.Period, 7 * width} {
			for _, off := range []time.Duration{0, time.Microsecond, width / 2, width - time.Microsecond} {
				c := newCaller(t, s, r)
				at := Start.Add(edge + off)
				c.now = at
				c.allow(int(r.Limit))
				res := c.take(1)
				require.False(t, res.Allowed)
				assert.Equal(t, r.Period, res.Limits[0].RetryAfter, "a burst of %s at %s waits a period", r, edge+off)
				assert.Equal(t, r.Period, res.Limits[0].Reset)
				c.now = at.Add(r.Period - time.Microsecond)
				assert.False(t, c.take(1).Allowed, "%s at %s: 1µs before a period", r, edge+off)
				c.now = at.Add(r.Period)
				c.allow(int(r.Limit))

				// A burst split across a bucket boundary: the older part
				// leaves when its bucket's end is a period old.
				c = newCaller(t, s, r)
				c.now = at
				c.allow(2)
				c.now = at.Add(width)
				c.allow(int(r.Limit) - 2)
				res = c.take(1)
				require.False(t, res.Allowed)
				wait := res.Limits[0].RetryAfter
				assert.LessOrEqual(t, wait, r.Period)
				assert.Equal(t, r.Period, res.Limits[0].Reset)
				c.now = c.now.Add(wait - time.Microsecond)
				assert.False(t, c.take(1).Allowed, "%s split at %s: 1µs before Retry-After %s", r, edge+off, wait)
				c.now = c.now.Add(time.Microsecond)
				c.allow(2)
			}
		}
	}
}

// testStrictOffsets runs the strict-window check from clocks at random
// offsets from the epoch's buckets.
func testStrictOffsets(t *testing.T, s core.Store) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3 {
		strictFrom(t, s, offset(rng, 24*time.Hour))
	}
}

// testConservative sends a random schedule of mixed costs and checks every
// answer against an exact log of what the store admitted: a request is
// admitted only if the log has room for it, and a refusal's Retry-After is
// at least the exact one and at most the period; Remaining is never above
// the exact one, and Reset lies between the exact one and the period.
func testConservative(t *testing.T, s core.Store) {
	rng := rand.New(rand.NewPCG(9, 10))
	limits := []core.Rate{{Limit: 7, Period: 10 * time.Second}, core.PerMinute(20)}
	c := newCaller(t, s, limits...)
	c.now = offset(rng, time.Minute)
	exact := &exactLog{limits: limits}
	denied := 0
	for i := range 1500 {
		step := time.Duration(rng.IntN(600)) * time.Millisecond
		switch rng.IntN(10) {
		case 0:
			step = 0
		case 1:
			step = time.Duration(rng.IntN(20_000_000)) * time.Microsecond
		}
		c.now = c.now.Add(step)
		cost := int64(1 + rng.IntN(4))
		wait := exact.wait(c.now, cost)
		res := c.take(cost)
		if res.Allowed {
			require.Zero(t, wait, "request %d of cost %d at %s: admitted only if an exact log has room", i, cost, c.now.Sub(Start))
			exact.add(c.now, cost)
		} else {
			denied++
			require.GreaterOrEqual(t, retryAfter(res), wait, "request %d: Retry-After", i)
		}
		for j, r := range limits {
			_, sum := exact.window(c.now, r)
			st := res.Limits[j]
			require.LessOrEqual(t, st.Remaining, r.Limit-sum, "request %d: Remaining of %s", i, r)
			require.LessOrEqual(t, st.RetryAfter, r.Period, "request %d: Retry-After of %s", i, r)
			require.LessOrEqual(t, st.Reset, r.Period, "request %d: Reset of %s", i, r)
			if sum > 0 {
				require.GreaterOrEqual(t, st.Reset, exact.log[len(exact.log)-1].at.Add(r.Period).Sub(c.now), "request %d: Reset of %s", i, r)
			}
		}
	}
	assert.Greater(t, denied, 200, "the schedule should exercise refusals")
}

// testMixedCosts is the schedule that a cache of denials reused for any
// higher cost answered wrongly: every answer must be Redis's own.
func testMixedCosts(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(3))
	at := func(sec int) { c.now = Start.Add(time.Duration(sec) * time.Second) }
	for _, step := range []struct {
		at      int
		cost    int64
		allowed bool
		retry   time.Duration // when refused
		why     string
	}{
		{at: 0, cost: 1, allowed: true},
		{at: 20, cost: 1, allowed: true},
		{at: 36, cost: 2, retry: 24 * time.Second, why: "room once the request at 0s leaves, at 60s"},
		{at: 36, cost: 1, allowed: true},
		{at: 36, cost: 2, retry: 45 * time.Second, why: "now the request at 20s must leave too, with its bucket [18s, 21s), at 81s"},
		{at: 50, cost: 2, retry: 31 * time.Second},
		{at: 50, cost: 1, retry: 10 * time.Second},
		{at: 50, cost: 2, retry: 31 * time.Second},
		{at: 60, cost: 2, retry: 21 * time.Second},
		{at: 60, cost: 1, allowed: true},
		{at: 70, cost: 2, retry: 26 * time.Second, why: "the request at 36s leaves at 96s"},
		{at: 81, cost: 2, retry: 15 * time.Second},
		{at: 96, cost: 2, allowed: true},
	} {
		at(step.at)
		res := c.take(step.cost)
		require.Equal(t, step.allowed, res.Allowed, "cost %d at %ds", step.cost, step.at)
		assert.Equal(t, step.retry, res.Limits[0].RetryAfter, "cost %d at %ds: %s", step.cost, step.at, step.why)
	}
}

// testClockStepForward moves the clock an hour ahead for one decision and
// back: the caller is not refused for the hour, and every wait it is told
// is at most the period and enough.
func testClockStepForward(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(3))
	c.allow(3)
	c.now = Start.Add(time.Hour)
	require.True(t, c.take(1).Allowed, "an hour later the window is empty")
	c.now = Start.Add(2 * time.Second)
	n := 0
	for c.now.Before(Start.Add(10 * time.Minute)) {
		res := c.take(1)
		if res.Allowed {
			n++
			continue
		}
		wait := res.Limits[0].RetryAfter
		require.Positive(t, wait)
		require.LessOrEqual(t, wait, time.Minute, "at %s, after the clock came back", c.now.Sub(Start))
		c.now = c.now.Add(wait)
		require.True(t, c.take(1).Allowed, "waiting %s is enough", wait)
		n++
	}
	assert.GreaterOrEqual(t, n, 3*9, "the caller is served about 3 a minute after the step")
}

// testClientHangsUp decides with a context that has ended: whatever the
// store answers, the limiter neither logs nor counts a store failure.
func testClientHangsUp(t *testing.T, s core.Store) {
	var log bytes.Buffer
	scope := uniqueScope(t)
	lim, err := core.New(core.Config{
		Store:      s,
		Scopes:     []core.Scope{{Name: scope, Anon: []core.Rate{core.PerMinute(2)}, User: []core.Rate{core.PerMinute(2)}}},
		NumProxies: new(0),
		Now:        func() time.Time { return Start },
		Logger:     slog.New(slog.NewTextHandler(&log, nil)),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 3 {
		_, err := lim.Allow(ctx, scope, anon("192.0.2.44"))
		require.NoError(t, err)
	}
	assert.Zero(t, lim.StoreFailures(), "a client that hangs up is no store failure")
	assert.Empty(t, log.String())

	res, err := storecall.Take(ctx, s, storecall.Request{Scope: uniqueScope(t), Caller: anon("192.0.2.45"), Limits: []core.Rate{core.PerMinute(1)}, Cost: 1, Now: Start})
	if err != nil {
		assert.ErrorIs(t, err, context.Canceled, "a store that gives up says why")
	} else {
		assert.True(t, res.Allowed, "a store that decides anyway decides right: %+v", res)
	}
}
