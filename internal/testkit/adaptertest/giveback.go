package adaptertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// LoginPath is the route the builder serves with POST and [Options.Login],
// in the group of [Path], when Login is set.
const LoginPath = "/api/login"

// PasswordHeader is the request header the suite's sign-in handler reads:
// the attempt is right when it is [RightPassword].
const PasswordHeader = "X-Password"

// RightPassword is the value of [PasswordHeader] that the suite's sign-in
// handler accepts.
const RightPassword = "right"

// login is the suite's Options.Login: 200 "welcome" for the right
// password, 401 "invalid credentials" otherwise, after entered is
// closed (when not nil), so that attempts can be held in the handler.
func login(entered *atomic.Int64, hold <-chan struct{}) func(http.ResponseWriter, *http.Request, *core.Decision) {
	return func(w http.ResponseWriter, r *http.Request, _ *core.Decision) {
		if entered != nil {
			entered.Add(1)
		}
		if hold != nil {
			<-hold
		}
		if r.Header.Get(PasswordHeader) == RightPassword {
			_, _ = io.WriteString(w, "welcome")
			return
		}
		http.Error(w, "invalid credentials", http.StatusUnauthorized)
	}
}

// post sends POST LoginPath from remoteAddr with the password.
func (a *app) post(remoteAddr, password string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, LoginPath, nil)
	req.RemoteAddr = remoteAddr
	req.Header.Set(PasswordHeader, password)
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, req)
	return w
}

// fiveAMinute gives anonymous callers 5/min and 100/day.
func fiveAMinute(c *core.Config) {
	c.Rates = map[string]string{"api.anon": "5/min,100/day"}
}

// testGiveBackOnce: a handler that gives back the decision the middleware
// kept, on a sign-in that succeeded (the documented way), and the
// middleware's own Config.GiveBack (statuses below 400) free the request
// once between them: however many right sign-ins come between, a caller
// gets exactly the limit's failed ones.
func testGiveBackOnce(t *testing.T, build builder) {
	var a *app
	handler := func(w http.ResponseWriter, r *http.Request, d *core.Decision) {
		if r.Header.Get(PasswordHeader) == RightPassword {
			require.NotNil(t, d, "the middleware keeps the decision")
			assert.NoError(t, a.lim.GiveBack(r.Context(), d))
			_, _ = io.WriteString(w, "welcome")
			return
		}
		http.Error(w, "invalid credentials", http.StatusUnauthorized)
	}
	a = newAppWith(t, build, nil, func(c *core.Config) {
		c.Rates = map[string]string{"api.anon": "3/min,100/day"}
	}, Options{Login: handler})
	const addr = "192.0.2.1:1234"
	failed := 0
	for range 10 {
		right := a.post(addr, RightPassword).Code
		require.Contains(t, []int{http.StatusOK, http.StatusTooManyRequests}, right)
		w := a.post(addr, "wrong")
		if w.Code == http.StatusUnauthorized {
			failed++
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, w.Code)
	}
	assert.Equal(t, 3, failed, "failed sign-ins under 3/min, counting failures only")
}

// testGiveBack: with Config.GiveBack giving back statuses below 400, only
// the failed attempts count: right ones never use up the limit, and a
// caller over it is refused before the handler, right password or not.
func testGiveBack(t *testing.T, build builder) {
	a := newAppWith(t, build, nil, fiveAMinute, Options{Login: login(nil, nil)})
	const addr = "192.0.2.1:1234"
	for i := range 20 {
		w := a.post(addr, RightPassword)
		require.Equal(t, http.StatusOK, w.Code, "right attempt %d", i+1)
		assert.Regexp(t, `"api.anon.min";r=4(,|$)`, w.Header().Get("RateLimit"), "right attempt %d: counted, given back after the answer", i+1)
	}
	for i := range 5 {
		w := a.post(addr, "wrong")
		require.Equal(t, http.StatusUnauthorized, w.Code, "wrong attempt %d", i+1)
	}
	w := a.post(addr, "wrong")
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "the sixth wrong attempt")
	w = a.post(addr, RightPassword)
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "over the limit, the right password is refused too, before the handler")
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	assert.Equal(t, http.StatusOK, a.post("192.0.2.2:1234", RightPassword).Code, "another caller")
	assert.Equal(t, http.StatusUnauthorized, a.post("192.0.2.2:1234", "wrong").Code, "another caller's count")

	// A 200 answer by a route of the group is given back too; a 401 is
	// not.
	a.clock.Advance(24 * time.Hour)
	for range 10 {
		require.Equal(t, http.StatusOK, a.get(addr, nil).Code)
	}
}

// testGiveBackConcurrent: 50 concurrent wrong attempts against a limit of
// 5: at most 5 reach the handler's answer, the others are refused; right
// attempts held in the handler meanwhile hold their units, and give them
// back.
func testGiveBackConcurrent(t *testing.T, build builder) {
	a := newAppWith(t, build, nil, fiveAMinute, Options{Login: login(nil, nil)})
	const n = 50
	var codes [n]int
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			codes[i] = a.post("192.0.2.1:1234", "wrong").Code
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	assert.Equal(t, map[int]int{http.StatusUnauthorized: 5, http.StatusTooManyRequests: n - 5}, count)

	// Right attempts in flight hold their units until they are answered:
	// 5 held in the handler use up the limit, a sixth attempt is refused;
	// once answered, they are given back.
	var entered atomic.Int64
	hold := make(chan struct{})
	b := newAppWith(t, build, nil, fiveAMinute, Options{Login: login(&entered, hold)})
	var held [5]int
	for i := range held {
		wg.Go(func() { held[i] = b.post("192.0.2.3:1234", RightPassword).Code })
	}
	for entered.Load() < int64(len(held)) {
		// Wait, without sleeping, for the 5 attempts to reach the handler.
		runtime.Gosched()
	}
	w := b.post("192.0.2.3:1234", RightPassword)
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "5 attempts under way hold the limit of 5")
	close(hold)
	wg.Wait()
	assert.Equal(t, [5]int{200, 200, 200, 200, 200}, held)
	for i := range 5 {
		assert.Equal(t, http.StatusUnauthorized, b.post("192.0.2.3:1234", "wrong").Code, "wrong attempt %d after 5 right ones", i+1)
	}
	assert.Equal(t, http.StatusTooManyRequests, b.post("192.0.2.3:1234", "wrong").Code)
}
