package main_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// burnEnv, set in the environment of a copy of the test binary, makes it
// burn a CPU until it is killed (see TestMain).
const burnEnv = "PORTAL_TEST_BURN"

// burn, in a copy of the test binary started by startBurners, spins.
func burn() {
	for {
	}
}

// startBurners starts runtime.NumCPU()*2 copies of the test binary that
// only burn CPU, as other builds on the machine do, until the test ends.
func startBurners(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() * 2 {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), burnEnv+"=1")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}

// loadAverage returns the first field of /proc/loadavg, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// callerAddr is the IPv6 address of caller i, each in a /64 of its own.
func callerAddr(i int) string {
	return fmt.Sprintf("2001:db8:%x:%x::1", i>>16, i&0xffff)
}

// burst sends, through the portals in turn, requests GET /api/records of
// callers distinct IPv6 callers (X-Forwarded-For, the portals behind one
// proxy), each sending perCaller requests one after another, from
// inFlight callers at a time; it returns how many of each caller's
// requests were served (200) and the statuses seen.
func burst(t *testing.T, portals []*process, callers, perCaller, inFlight int) ([]int, map[int]int) {
	t.Helper()
	client := &http.Client{
		Timeout:   60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: inFlight, MaxConnsPerHost: inFlight},
	}
	defer client.CloseIdleConnections()
	served := make([]int, callers)
	var mu sync.Mutex
	statuses := map[int]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range inFlight {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= callers {
					return
				}
				for r := range perCaller {
					p := portals[(i+r)%len(portals)]
					req, err := http.NewRequest(http.MethodGet, p.url+"/api/records", nil)
					if err == nil {
						req.Header.Set("X-Forwarded-For", callerAddr(i))
						var resp *http.Response
						if resp, err = client.Do(req); err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							_ = resp.Body.Close()
							mu.Lock()
							statuses[resp.StatusCode]++
							mu.Unlock()
							if resp.StatusCode == http.StatusOK {
								served[i]++
							}
						}
					}
					if err != nil {
						failed.CompareAndSwap(nil, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("a request failed: %v", err)
	}
	return served, statuses
}

// over returns how many callers were served more than limit times.
func over(served []int, limit int) int {
	n := 0
	for _, s := range served {
		if s > limit {
			n++
		}
	}
	return n
}

// TestLoadLateAnswers starts CPU burners on every core, then sends through
// the portal, on a healthy Redis with api.anon=3/min,10000/day, 3,000
// distinct IPv6 callers sending 4 requests each, 500 at a time: no caller
// is served more than 3 times, on each framework. A decision whose Redis
// answer comes late under the load is decided in memory knowing what
// Redis had counted, instead of being served uncounted. `make load` runs
// it loadRuns times per framework.
func TestLoadLateAnswers(t *testing.T) {
	srv := redistest.ServerFor(t)
	startBurners(t)
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			for run := range loadRuns {
				p := start(t, "-framework", fw, "-num-proxies", "1", "-redis", fmt.Sprintf("redis://%s/%d", srv.Addr, run%16),
					"-rates", "api.anon=3/min,10000/day")
				// A prefix of its own per run: the runs share the Redis.
				flushDB(t, srv.Addr, run%16)
				begin := time.Now()
				served, statuses := burst(t, []*process{p}, 3000, 4, 500)
				n := over(served, 3)
				t.Logf("%s run %d: %d of 3000 callers served more than 3 times, %d fewer; statuses %v; %s; load average %s; %s",
					fw, run+1, n, 3000-counts(served)[3]-n, statuses, time.Since(begin).Round(time.Millisecond), loadAverage(), logCount(p, "decided in the process's memory"))
				if !assert.Zero(t, n, "callers served more than 3 times, run %d", run+1) {
					t.Logf("the portal's log:\n%s", tail(p.stderr.String(), 4000))
				}
				// A late decision that Redis runs after all is counted in
				// memory too until its window ends: its caller may be
				// refused a unit early (ADR 0007), never late.
				assert.LessOrEqual(t, statuses[http.StatusOK], 3000*3)
			}
		})
	}
}

// flushDB empties database db of the Redis at addr: a database the test's
// own Redis gives each run, so that a run starts from no counts.
func flushDB(t *testing.T, addr string, db int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	defer c.Close()
	require.NoError(t, c.FlushDB(context.Background()).Err())
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	return s[max(len(s)-n, 0):]
}

// logCount returns how many lines of p's log contain text, as a phrase.
func logCount(p *process, text string) string {
	return fmt.Sprintf("%d log lines %q", strings.Count(p.stderr.String(), text), text)
}

// TestFailLocalTwoPortals runs two portals on one Redis with -fail-local
// api and api.anon=3/min,10000/day, and stops Redis: each portal decides in
// memory, so that a caller sending to both is served at most 2 × 3 times
// in the window, and 3 times by each.
func TestFailLocalTwoPortals(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	portals := failLocalPortals(t, srv, "gin", "echo5")
	require.NoError(t, srv.Stop())
	served, statuses := burst(t, portals, 300, 10, 50)
	t.Logf("Redis stopped, two portals: served per caller %v; statuses %v", counts(served), statuses)
	assert.Zero(t, over(served, 2*3), "callers served more than 2 × 3 times")
	assert.Equal(t, 300*2*3, statuses[http.StatusOK], "every caller served 3 times by each portal")
	for _, p := range portals {
		assert.Contains(t, p.stderr.String(), "decided in the process's memory")
		assert.NotContains(t, p.stderr.String(), "request allowed without counting (fail open)")
	}
}

// failLocalPortals starts a portal of each framework on srv with
// -fail-local api and api.anon=3/min,10000/day, behind one proxy.
func failLocalPortals(t *testing.T, srv *redistest.Server, frameworks ...string) []*process {
	t.Helper()
	var portals []*process
	for _, fw := range frameworks {
		portals = append(portals, start(t, "-framework", fw, "-num-proxies", "1", "-redis", "redis://"+srv.Addr+"/0",
			"-rates", "api.anon=3/min,10000/day", "-fail-local", "api"))
	}
	return portals
}

// counts returns how many callers were served each number of times.
func counts(served []int) map[int]int {
	m := map[int]int{}
	for _, s := range served {
		m[s]++
	}
	return m
}

// TestFailLocalCarryOver runs two portals on one Redis with -fail-local
// api, stops Redis in the middle of a window, has a caller served by the
// first portal in memory until it is refused, and starts Redis again
// (empty): once the first portal answers from Redis again, it carries what
// it counted into it, and the caller gets no fresh allowance from the
// second within the window.
func TestFailLocalCarryOver(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	portals := failLocalPortals(t, srv, "echo", "gin")
	a, b := portals[0], portals[1]
	caller := map[string]string{"X-Forwarded-For": "2001:db8:c0::1"}
	resp, body := a.getWith(t, "/api/records", map[string]string{"X-Forwarded-For": "2001:db8:99::1"})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)

	require.NoError(t, srv.Stop())
	var got []int
	for range 5 {
		resp, _ := a.getWith(t, "/api/records", caller)
		got = append(got, resp.StatusCode)
	}
	assert.Equal(t, []int{200, 200, 200, 429, 429}, got, "decided in memory: 3 served, then refused")

	require.NoError(t, srv.Restart())
	// The caller's key in Redis: its /64, in hex, in the hash tag.
	key := "ratescope:api:{a20010db800c00000" + strings.Repeat("0", 16) + "}:60s,86400s"
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	other := map[string]string{"X-Forwarded-For": "2001:db8:98::1"}
	require.Eventually(t, func() bool {
		_, _ = a.getWith(t, "/api/records", other) // once Redis answers it, the portal carries
		n, err := c.Exists(context.Background(), key).Result()
		return err == nil && n == 1
	}, 20*time.Second, 50*time.Millisecond, "the first portal carries the caller's counts into Redis once it answers again")
	left, err := c.PTTL(context.Background(), key).Result()
	require.NoError(t, err)
	t.Logf("the caller's key carried into Redis, expiring in %s", left)

	resp, body = b.getWith(t, "/api/records", caller)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "no fresh allowance from the second portal: %s, RateLimit %q", body, resp.Header.Get("RateLimit"))
	resp, _ = a.getWith(t, "/api/records", caller)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "nor from the first")
}
