// Package adaptertest is the suite that every framework adapter (ginlimit,
// echolimit) passes, so that a request gets the same answer on Gin and on
// Echo.
//
// An adapter's test runs it with a builder that serves GET [Path] and GET
// [ExportPath] in one group of routes whose middleware is the adapter's,
// configured from the framework-neutral [Options]:
//
//	func TestSuite(t *testing.T) {
//		adaptertest.Run(t, func(t *testing.T, o adaptertest.Options) http.Handler {
//			cfg := ginlimit.Config{Limiter: o.Limiter, Cost: o.Cost, RouteCosts: o.RouteCosts, KeepDecision: !o.DropDecision}
//			// ... User, Key, Skip, Exempt, Deny and StoreError as Options says ...
//			limit, err := ginlimit.New(cfg)
//			require.NoError(t, err)
//			r := gin.New()
//			handle := func(c *gin.Context) {
//				d, ok := ginlimit.Decision(c)
//				o.Handler(c.Writer, d, ok)
//			}
//			api := r.Group(adaptertest.Path, limit)
//			api.GET("", handle)
//			api.GET(adaptertest.ExportPath[len(adaptertest.Path):], handle)
//			return r
//		})
//	}
//
// The suite covers the answer over the limit (429, Retry-After, the
// RateLimit headers and the JSON body, before the handler runs), anonymous
// and signed-in callers counted apart with the user read from a header or
// from the context, X-Forwarded-For behind one proxy, exemption, cost, a
// custom deny handler, failing open when the store fails and an error
// handler that refuses, and the decision the handler reads (none without
// KeepDecision); and, for
// running in production, the observation hook with every outcome, shadow
// mode, per-route costs in one group decision, callers counted by key,
// the Skipper, and trusted proxies against direct forged requests; giving
// back the units of the requests that succeeded, so that only failures
// count (Config.GiveBack), strict under concurrency; the allowlists of the core (exempt networks and users, with no adapter code),
// failing closed (503 with Retry-After, to the default and a custom deny
// handler) and the adapter's DenyProblem ([Options.Problem]).
// the Skipper, and trusted proxies against direct forged requests; and
// the header policy (core.Config.Headers: the fields on every response, on
// refusals only, or none, with Retry-After on a 429 always).
// What
// only one framework has (the errors of New) is tested in the adapter's own
// package.
package adaptertest

import (
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// Path is the path of the group the builder serves, and of its first
// route, with GET.
const Path = "/api"

// ExportPath is the group's second route, with GET. Its pattern is the
// key of [Options.Costs] that the suite uses.
const ExportPath = "/api/export"

// KeyHeader is the request header that carries the key a caller is counted
// by, when [Options.Key] is true.
const KeyHeader = "X-Api-Key"

// UserHeader is the request header that carries the signed-in user's id
// when [Options.User] is [UserFromHeader] or [UserFromContext].
const UserHeader = "X-User"

// A UserSource says where the middleware's Config.User finds the signed-in
// user's id.
type UserSource int

const (
	// NoUser leaves Config.User nil: every caller is anonymous, whatever
	// headers it sends.
	NoUser UserSource = iota
	// UserFromHeader makes Config.User return the [UserHeader] request
	// header.
	UserFromHeader
	// UserFromContext makes Config.User return the value that a middleware
	// registered before the limiter stored in the framework's context (as a
	// session middleware would), that middleware having read it from the
	// [UserHeader] request header.
	UserFromContext
)

// Options is what a subtest asks of the middleware, in terms of no
// framework. The builder translates each field into the adapter's Config;
// a zero field means the Config field is left zero (the default).
type Options struct {
	// Limiter is Config.Limiter. The scope is the default, "api".
	Limiter *core.Limiter

	// User says what Config.User is.
	User UserSource

	// Exempt, when not nil, is Config.Exempt: the builder's Exempt calls
	// it with the caller.
	Exempt func(caller core.Caller) bool

	// Cost is Config.Cost.
	Cost int64

	// RouteCosts is Config.RouteCosts.
	RouteCosts map[string]int64

	// Key, when true, makes Config.Key return the [KeyHeader] request
	// header.
	Key bool

	// Skip, when not nil, is Config.Skipper: the builder's Skipper calls
	// it with the request. A builder whose adapter has no Skipper skips
	// the test.
	Skip func(r *http.Request) bool

	// Deny, when not nil, makes Config.DenyHandler answer 503 Service
	// Unavailable with the text Deny returns, the framework's way (Gin:
	// c.String; Echo: return c.String). It does nothing else: it neither
	// aborts nor returns an error, so that keeping the handler from
	// running is left to the middleware.
	Deny func(d *core.Decision) string

	// StoreError, when not nil, makes Config.ErrorHandler call it with the
	// store's error and then refuse the request with 503 Service
	// Unavailable, the framework's way (Gin: c.AbortWithStatus; Echo:
	// return echo.NewHTTPError).
	StoreError func(err error)

	// DropDecision, when true, leaves Config.KeepDecision false; otherwise
	// the builder sets it, so that the route's handler finds the decision.
	DropDecision bool

	// Plan, when true, makes Config.Plan return the [PlanHeader] request
	// header.
	Plan bool

	// Handler is the route's handler: the builder's handler reads the
	// decision with the adapter's Decision function and calls Handler with
	// its response writer and both results. Handler writes the response.
	Handler func(w http.ResponseWriter, d *core.Decision, ok bool)

	// Login, when not nil, is the handler of POST [LoginPath], which the
	// builder then adds to the group (the framework's way: Gin:
	// Login(c.Writer, c.Request, d) with d the adapter's Decision, nil when
	// there is none; Echo: the same with c.Response(), and return nil),
	// and Config.GiveBack gives back every request answered with a status
	// below 400.
	Login func(w http.ResponseWriter, r *http.Request, d *core.Decision)
	// Problem, when true and Deny is nil, makes Config.DenyHandler the
	// adapter's DenyProblem (problem details, RFC 9457).
	Problem bool
}

// NewLimiter returns a limiter on a fresh memory store and clock, for the
// tests an adapter keeps for itself: in the "api" scope, 3/min and 100/day
// for anonymous callers, 5/min and 1000/day for users; one proxy; store
// errors not logged.
func NewLimiter(t *testing.T, clock *storetest.Clock) *core.Limiter {
	t.Helper()
	return newLimiter(t, nil, clock)
}

// newLimiter is [NewLimiter] on store, or on a fresh memory store if store
// is nil.
func newLimiter(t *testing.T, store core.Store, clock *storetest.Clock) *core.Limiter {
	t.Helper()
	return newLimiterWith(t, store, clock, nil)
}

// newLimiterWith is newLimiter with the config changed by tweak, if not
// nil.
func newLimiterWith(t *testing.T, store core.Store, clock *storetest.Clock, tweak func(*core.Config)) *core.Limiter {
	t.Helper()
	if store == nil {
		ms := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = ms.Close() })
		store = ms
	}
	cfg := core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "3/min,100/day", "api.user": "5/min,1000/day"},
		NumProxies: new(1),
		Now:        clock.Now,
		Logger:     slog.New(slog.DiscardHandler),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	lim, err := core.New(cfg)
	require.NoError(t, err)
	return lim
}

// The RateLimit-Policy values of the suite's limiter.
const (
	anonPolicy = `"api.anon.min";q=3;w=60, "api.anon.day";q=100;w=86400`
	userPolicy = `"api.user.min";q=5;w=60, "api.user.day";q=1000;w=86400`
)

// Run runs the suite; build serves GET [Path] with the middleware that o
// describes, or fails the test. Every subtest runs in parallel with its own
// limiter, memory store and fake clock.
func Run(t *testing.T, build func(t *testing.T, o Options) http.Handler) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, build builder)
	}{
		{"DeniedBeforeTheHandlerUntilRetryAfter", testLimit},
		{"CallersApart", testCallersApart},
		{"NoUserFunctionMeansAnonymous", testNoUser},
		{"ForwardedForSpoofingDoesNotEscapeTheLimit", testForwardedFor},
		{"ExemptServedAndNotCounted", testExempt},
		{"Cost", testCost},
		{"DenyHandler", testDenyHandler},
		{"StoreFailureFailsOpen", testFailOpen},
		{"ErrorHandlerRefusesOnStoreFailure", testErrorHandler},
		{"ObserveSeesEveryOutcome", testObserve},
		{"ShadowCountedNeverRefused", testShadow},
		{"RouteCostsOneDecisionPerRequest", testRouteCosts},
		{"RouteCostAboveTheLimitIsClamped", testRouteCostClamped},
		{"KeyCallersApart", testKey},
		{"Skipper", testSkipper},
		{"DecisionNotKeptWithoutKeepDecision", testDecisionNotKept},
		{"TrustedProxiesDirectForgeryIsOneCaller", testTrustedDirect},
		{"TrustedProxiesWalk", testTrustedWalk},
		// Give-back (giveback.go).
		{"GiveBackOnlyFailuresCount", testGiveBack},
		{"GiveBackOnceWhateverCopies", testGiveBackOnce},
		{"GiveBackStrictUnderConcurrency", testGiveBackConcurrent},
		{"ExemptNetworksAndUsersWithoutAdapterCode", testExemptNetworks},
		{"FailClosedAnswers503WithRetryAfter", testFailClosed},
		{"DenyProblemDetails", testDenyProblem},
		{"PlansChosenPerRequestOneCount", testPlans},
		{"HeaderModes", testHeaderModes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, build)
		})
	}
}

type builder = func(t *testing.T, o Options) http.Handler

// app is the handler a builder made, with the decisions its route's handler
// saw.
type app struct {
	t     *testing.T
	clock *storetest.Clock
	h     http.Handler

	lim *core.Limiter

	mu   sync.Mutex
	seen []*core.Decision // nil where the handler found no decision
}

// newApp builds an app on a limiter over store (a fresh memory store if
// nil) with a fake clock; o.Limiter and o.Handler are set here.
func newApp(t *testing.T, build builder, store core.Store, o Options) *app {
	t.Helper()
	return newAppWith(t, build, store, nil, o)
}

// newAppWith is newApp on a limiter whose config tweak changes.
func newAppWith(t *testing.T, build builder, store core.Store, tweak func(*core.Config), o Options) *app {
	t.Helper()
	a := &app{t: t, clock: storetest.NewClock(storetest.Start)}
	o.Limiter = newLimiterWith(t, store, a.clock, tweak)
	a.lim = o.Limiter
	o.Handler = a.handle
	a.h = build(t, o)
	require.NotNil(t, a.h, "the builder returned no handler")
	return a
}

// handle is the route's handler: it records the decision and answers 200
// "ok", or 500 if the middleware left no decision.
func (a *app) handle(w http.ResponseWriter, d *core.Decision, ok bool) {
	a.mu.Lock()
	if !ok {
		d = nil
	}
	a.seen = append(a.seen, d)
	a.mu.Unlock()
	if d == nil {
		http.Error(w, "no decision", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "ok")
}

// served returns how many times the route's handler ran.
func (a *app) served() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

// last returns the decision the route's handler saw last; it fails the
// test if the handler never ran or found no decision.
func (a *app) last() *core.Decision {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.NotEmpty(a.t, a.seen, "the handler never ran")
	d := a.seen[len(a.seen)-1]
	require.NotNil(a.t, d, "the handler found no decision (Decision returned false)")
	return d
}

// get sends GET Path from remoteAddr with the given headers.
func (a *app) get(remoteAddr string, header map[string]string) *httptest.ResponseRecorder {
	return a.getPath(Path, remoteAddr, header)
}

// getPath sends GET path from remoteAddr with the given headers.
func (a *app) getPath(path, remoteAddr string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = remoteAddr
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, req)
	return w
}

// user returns the headers of a request by the signed-in user id.
func user(id string) map[string]string {
	return map[string]string{UserHeader: id}
}

func testLimit(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{User: UserFromHeader})

	for i := range 3 {
		w := a.get("192.0.2.1:1234", nil)
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Equal(t, "ok", w.Body.String())
		assert.Equal(t, anonPolicy, w.Header().Get("RateLimit-Policy"))
		assert.Regexp(t, `"api.anon.min";r=`+strconv.Itoa(2-i)+"(,|$)", w.Header().Get("RateLimit"))
		assert.Empty(t, w.Header().Get("Retry-After"))
		assert.Equal(t, i+1, a.served())
		d := a.last()
		assert.True(t, d.Allowed)
		assert.True(t, d.Checked)
		assert.Equal(t, "api", d.Scope)
		assert.Equal(t, core.Anonymous, d.Caller.Kind())
		assert.Equal(t, "192.0.2.1", d.Caller.String())
		assert.Equal(t, int64(1), d.Cost)
		assert.NoError(t, d.StoreErr)
	}

	w := a.get("192.0.2.1:1234", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	retry := w.Header().Get("Retry-After")
	require.NotEmpty(t, retry)
	secs, err := strconv.Atoi(retry)
	require.NoError(t, err)
	assert.Positive(t, secs)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=0;t=`)
	assert.Equal(t, anonPolicy, w.Header().Get("RateLimit-Policy"))
	assert.JSONEq(t, `{"detail":"Request was throttled. Expected available in `+retry+` seconds.","retry_after":`+retry+`}`, w.Body.String())
	mediaType, params, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
	require.NoError(t, err, "Content-Type of the refusal")
	assert.Equal(t, "application/json", mediaType)
	if charset, ok := params["charset"]; ok {
		assert.Equal(t, "utf-8", strings.ToLower(charset))
	}
	assert.Equal(t, 3, a.served(), "the handler must not run")

	a.clock.Advance(time.Duration(secs) * time.Second)
	assert.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", nil).Code, "allowed again after Retry-After")
	assert.Equal(t, 4, a.served())
}

func testCallersApart(t *testing.T, build builder) {
	for _, tt := range []struct {
		name string
		user UserSource
	}{
		{name: "UserFromHeader", user: UserFromHeader},
		{name: "UserFromContext", user: UserFromContext},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newApp(t, build, nil, Options{User: tt.user})

			for range 3 {
				require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", nil).Code)
			}
			require.Equal(t, http.StatusTooManyRequests, a.get("192.0.2.1:1234", nil).Code)

			// A user signed in from the same address has a count of its
			// own, by id, with the user limits.
			w := a.get("192.0.2.1:1234", user("alice"))
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, userPolicy, w.Header().Get("RateLimit-Policy"))
			assert.Regexp(t, `"api.user.min";r=4(,|$)`, w.Header().Get("RateLimit"))
			d := a.last()
			assert.Equal(t, core.User, d.Caller.Kind())
			assert.Equal(t, "alice", d.Caller.String())
			assert.True(t, d.Checked)
			for range 4 {
				require.Equal(t, http.StatusOK, a.get("198.51.100.9:1", user("alice")).Code)
			}
			assert.Equal(t, http.StatusTooManyRequests, a.get("203.0.113.5:1", user("alice")).Code,
				"a user is counted by id whatever its address")

			w = a.get("192.0.2.1:1234", user("bob"))
			assert.Equal(t, http.StatusOK, w.Code, "another user has its own count")
			assert.Equal(t, "bob", a.last().Caller.String())

			w = a.get("192.0.2.2:1234", nil)
			assert.Equal(t, http.StatusOK, w.Code, "another address has its own count")
			d = a.last()
			assert.Equal(t, core.Anonymous, d.Caller.Kind())
			assert.Equal(t, "192.0.2.2", d.Caller.String())
			assert.Equal(t, 3+5+1+1, a.served())
		})
	}
}

func testNoUser(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{User: NoUser})

	// Without Config.User, a user header is just a header: the callers
	// are counted by address, with the anonymous limits.
	for i, id := range []string{"alice", "bob", "carol"} {
		w := a.get("192.0.2.1:1234", user(id))
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Equal(t, anonPolicy, w.Header().Get("RateLimit-Policy"))
		d := a.last()
		assert.Equal(t, core.Anonymous, d.Caller.Kind())
		assert.Equal(t, "192.0.2.1", d.Caller.String())
	}
	assert.Equal(t, http.StatusTooManyRequests, a.get("192.0.2.1:1234", user("dave")).Code)
}

func testForwardedFor(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{User: UserFromHeader})

	// Behind one proxy (10.0.0.1), the caller at 203.0.113.7 writes a new
	// left-hand entry each time; the proxy appends the real address.
	spoof := func(i int) map[string]string {
		return map[string]string{
			"X-Forwarded-For": "198.51.100." + strconv.Itoa(i) + ", 203.0.113.7",
			"X-Real-IP":       "198.51.100." + strconv.Itoa(i),
		}
	}
	for i := range 3 {
		w := a.get("10.0.0.1:5555", spoof(i))
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "203.0.113.7", a.last().Caller.String())
	}
	assert.Equal(t, http.StatusTooManyRequests, a.get("10.0.0.1:5555", spoof(9)).Code)
	assert.Equal(t, http.StatusTooManyRequests, a.get("10.0.0.1:5555", map[string]string{"X-Forwarded-For": "203.0.113.7"}).Code)
	assert.Equal(t, http.StatusOK, a.get("10.0.0.1:5555", map[string]string{"X-Forwarded-For": "203.0.113.8"}).Code)
	assert.Equal(t, "203.0.113.8", a.last().Caller.String())
}

func testExempt(t *testing.T, build builder) {
	var asked []core.Caller
	a := newApp(t, build, nil, Options{
		User: UserFromHeader,
		Exempt: func(c core.Caller) bool {
			asked = append(asked, c)
			return c.User() == "admin"
		},
		RouteCosts: map[string]int64{ExportPath: 2},
	})
	for i := range 10 {
		w := a.get("192.0.2.1:1234", user("admin"))
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Empty(t, w.Header().Get("RateLimit"))
		assert.Empty(t, w.Header().Get("RateLimit-Policy"))
		d := a.last()
		assert.True(t, d.Allowed)
		assert.False(t, d.Checked)
		assert.Equal(t, "admin", d.Caller.String())
	}
	require.Equal(t, http.StatusOK, a.getPath(ExportPath, "192.0.2.1:1234", user("admin")).Code)
	assert.Equal(t, int64(2), a.last().Cost, "an exempt request has its route's cost")
	assert.Equal(t, core.OutcomeExempt, a.last().Outcome)
	require.Len(t, asked, 11, "Exempt is asked once a request")
	assert.Equal(t, core.UserCaller("admin"), asked[0], "Exempt is asked about the caller")

	w := a.get("192.0.2.1:1234", user("alice"))
	require.Equal(t, http.StatusOK, w.Code)
	assert.True(t, a.last().Checked)
	assert.Regexp(t, `"api.user.min";r=4(,|$)`, w.Header().Get("RateLimit"))
}

func testCost(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{User: UserFromHeader, Cost: 2})

	w := a.get("192.0.2.1:1234", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Regexp(t, `"api.anon.min";r=1(,|$)`, w.Header().Get("RateLimit"))
	assert.Regexp(t, `"api.anon.day";r=98(,|$)`, w.Header().Get("RateLimit"))
	assert.Equal(t, int64(2), a.last().Cost)
	w = a.get("192.0.2.1:1234", nil)
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "2 units left of 3 is not enough")
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=1;t=`, "a refusal uses nothing")
	assert.Equal(t, 1, a.served())
}

func testDenyHandler(t *testing.T, build builder) {
	var denied []*core.Decision
	a := newApp(t, build, nil, Options{
		User: UserFromHeader,
		Deny: func(d *core.Decision) string {
			denied = append(denied, d)
			return "slow down, " + d.Caller.String()
		},
	})
	for range 3 {
		require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", nil).Code)
	}
	assert.Empty(t, denied, "the deny handler runs only over the limit")

	w := a.get("192.0.2.1:1234", nil)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "slow down, 192.0.2.1", w.Body.String())
	assert.Equal(t, 3, a.served(), "the handler must not run, even if the deny handler does not stop it")
	retry := w.Header().Get("Retry-After")
	assert.NotEmpty(t, retry, "the headers are set before the deny handler runs")
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=0;t=`)
	require.Len(t, denied, 1)
	assert.False(t, denied[0].Allowed)
	assert.Equal(t, retry, strconv.FormatInt(denied[0].Problem().RetryAfter, 10))
}

// failingStore is a core.Store that cannot be reached.
type failingStore struct{}

var errDown = errors.New("adaptertest: store down")

func (failingStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(errDown).Bind("", 0, nil)
}

func testFailOpen(t *testing.T, build builder) {
	a := newApp(t, build, failingStore{}, Options{User: UserFromHeader})
	for i := range 5 {
		w := a.get("192.0.2.1:1234", nil)
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Empty(t, w.Header().Get("RateLimit"))
		assert.Empty(t, w.Header().Get("RateLimit-Policy"))
		d := a.last()
		assert.True(t, d.Allowed)
		assert.False(t, d.Checked)
		assert.ErrorIs(t, d.StoreErr, errDown, "the handler sees the store's error")
	}
	assert.Equal(t, 5, a.served())
}

func testErrorHandler(t *testing.T, build builder) {
	var got []error
	a := newApp(t, build, failingStore{}, Options{
		User:       UserFromHeader,
		StoreError: func(err error) { got = append(got, err) },
	})
	w := a.get("192.0.2.1:1234", nil)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Zero(t, a.served(), "the handler must not run")
	require.Len(t, got, 1)
	assert.ErrorIs(t, got[0], errDown)
}

// testDecisionNotKept checks that without Config.KeepDecision the handler
// finds no decision, while the request is counted and gets its headers.
func testDecisionNotKept(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{DropDecision: true})
	for i := range 2 {
		w := a.get("192.0.2.1:1234", nil)
		assert.Equal(t, http.StatusInternalServerError, w.Code, "the handler found no decision")
		assert.Equal(t, anonPolicy, w.Header().Get("Ratelimit-Policy"))
		assert.Equal(t, `"api.anon.min";r=`+strconv.Itoa(2-i)+`, "api.anon.day";r=`+strconv.Itoa(99-i), w.Header().Get("Ratelimit"), "request %d counted", i+1)
	}
	assert.Equal(t, 2, a.served())
}
