package adaptertest

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// This file holds the subtests of what running in production needs: the
// observation hook, shadow mode, per-route costs, callers counted by key,
// the Skipper and trusted proxies.

// seenEvent is what the observation hook was called with, copied during
// the call as the hook's contract asks.
type seenEvent struct {
	outcome  core.Outcome
	scope    string
	caller   core.Caller
	cost     int64
	refusing core.Rate
	duration time.Duration
}

// events records the observation hook's calls.
type events struct {
	mu  sync.Mutex
	all []seenEvent
}

func (e *events) observe(_ context.Context, ev core.Event) {
	d := ev.Decision
	s := seenEvent{outcome: d.Outcome, scope: d.Scope, caller: d.Caller, cost: d.Cost, duration: ev.Duration}
	if st, ok := d.Refusing(); ok {
		s.refusing = st.Rate
	}
	e.mu.Lock()
	e.all = append(e.all, s)
	e.mu.Unlock()
}

func (e *events) list() []seenEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]seenEvent(nil), e.all...)
}

// outcomes returns the outcomes seen, in order.
func (e *events) outcomes() []core.Outcome {
	var out []core.Outcome
	for _, s := range e.list() {
		out = append(out, s.outcome)
	}
	return out
}

// logRecords is a slog.Handler that keeps the records.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}

// matching returns the attributes of the records with message msg.
func (h *logRecords) matching(msg string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

func testObserve(t *testing.T, build builder) {
	var ev events
	observe := func(c *core.Config) { c.Observe = ev.observe }
	a := newAppWith(t, build, nil, observe, Options{
		User:   UserFromHeader,
		Exempt: func(c core.Caller) bool { return c.User() == "admin" },
	})
	for range 3 {
		require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", nil).Code)
	}
	require.Equal(t, http.StatusTooManyRequests, a.get("192.0.2.1:1234", nil).Code)
	require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", user("admin")).Code)
	require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", user("alice")).Code)

	all := ev.list()
	require.Len(t, all, 6, "one call per decision")
	assert.Equal(t, []core.Outcome{core.OutcomeAllowed, core.OutcomeAllowed, core.OutcomeAllowed,
		core.OutcomeDenied, core.OutcomeExempt, core.OutcomeAllowed}, ev.outcomes())
	for _, s := range all {
		assert.Equal(t, "api", s.scope)
		assert.Equal(t, int64(1), s.cost)
	}
	assert.Equal(t, "192.0.2.1", all[3].caller.String())
	assert.Equal(t, core.PerMinute(3), all[3].refusing, "the limit that refused")
	assert.Equal(t, core.Rate{}, all[2].refusing, "no limit refused an allowed request")
	assert.Equal(t, core.UserCaller("admin"), all[4].caller)
	assert.Zero(t, all[4].duration, "an exempt caller is decided without the store")
	assert.Equal(t, core.User, all[5].caller.Kind())

	var failed events
	f := newAppWith(t, build, failingStore{}, func(c *core.Config) { c.Observe = failed.observe }, Options{})
	require.Equal(t, http.StatusOK, f.get("192.0.2.1:1234", nil).Code)
	assert.Equal(t, []core.Outcome{core.OutcomeFailedOpen}, failed.outcomes())
}

func testShadow(t *testing.T, build builder) {
	var ev events
	logs := &logRecords{}
	a := newAppWith(t, build, nil, func(c *core.Config) {
		c.Scopes = apiScopes(c.Scopes, func(s *core.Scope) { s.Shadow = true })
		c.Observe = ev.observe
		c.Logger = slog.New(logs)
	}, Options{User: UserFromHeader})

	for i := range 10 {
		w := a.get("192.0.2.1:1234", nil)
		require.Equal(t, http.StatusOK, w.Code, "request %d: shadow mode refuses nobody", i+1)
		remaining := max(2-i, 0)
		assert.Regexp(t, `"api.anon.min";r=`+strconv.Itoa(remaining)+`(;t=[0-9]+)?(,|$)`, w.Header().Get("RateLimit"),
			"request %d: the headers count as if enforced", i+1)
		assert.Empty(t, w.Header().Get("Retry-After"), "a served request has no Retry-After")
		d := a.last()
		assert.True(t, d.Allowed)
		if i < 3 {
			assert.Equal(t, core.OutcomeAllowed, d.Outcome)
		} else {
			assert.Equal(t, core.OutcomeShadow, d.Outcome)
			assert.Positive(t, d.RetryAfter, "the wait it would have had")
		}
	}
	assert.Equal(t, 10, a.served(), "the handler ran every time")
	want := []core.Outcome{core.OutcomeAllowed, core.OutcomeAllowed, core.OutcomeAllowed}
	for range 7 {
		want = append(want, core.OutcomeShadow)
	}
	assert.Equal(t, want, ev.outcomes(), "observed exactly as if enforced")

	const msg = "ratescope: shadow mode served a request over the limit"
	logged := logs.matching(msg)
	require.Len(t, logged, 1, "logged at a limited rate: once per ErrorLogInterval")
	assert.Equal(t, "192.0.2.1", logged[0]["caller"])
	assert.Equal(t, "3/min", logged[0]["limit"])
	assert.Equal(t, "api", logged[0]["scope"])
	assert.Equal(t, "anon", logged[0]["kind"])

	a.clock.Advance(10 * time.Second)
	require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", nil).Code)
	logged = logs.matching(msg)
	require.Len(t, logged, 2)
	assert.Equal(t, "6", logged[1]["suppressed"], "the records left out are counted")
}

func testRouteCosts(t *testing.T, build builder) {
	var ev events
	a := newAppWith(t, build, nil, func(c *core.Config) { c.Observe = ev.observe },
		Options{User: UserFromHeader, RouteCosts: map[string]int64{ExportPath: 2}})

	w := a.getPath(ExportPath, "192.0.2.1:1234", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Regexp(t, `"api.anon.min";r=1(,|$)`, w.Header().Get("RateLimit"), "counted once, at the route's cost")
	assert.Equal(t, int64(2), a.last().Cost)
	w = a.get("192.0.2.1:1234", nil)
	require.Equal(t, http.StatusOK, w.Code, "another route of the group costs Cost")
	assert.Regexp(t, `"api.anon.min";r=0(,|$)`, w.Header().Get("RateLimit"))
	assert.Equal(t, int64(1), a.last().Cost)
	assert.Len(t, ev.list(), 2, "one decision per request")

	w = a.getPath(ExportPath, "192.0.2.2:1234", user("alice"))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Regexp(t, `"api.user.min";r=3(,|$)`, w.Header().Get("RateLimit"))
}

func testRouteCostClamped(t *testing.T, build builder) {
	// A cost of 5 above a limit of 3: clamped to 3, never an error.
	a := newApp(t, build, nil, Options{RouteCosts: map[string]int64{ExportPath: 5}})
	w := a.getPath(ExportPath, "192.0.2.1:1234", nil)
	require.Equal(t, http.StatusOK, w.Code, "allowed from an empty window")
	assert.Regexp(t, `"api.anon.min";r=0(,|$)`, w.Header().Get("RateLimit"))
	assert.Equal(t, int64(3), a.last().Cost)
	assert.Equal(t, http.StatusTooManyRequests, a.getPath(ExportPath, "192.0.2.1:1234", nil).Code)

	require.Equal(t, http.StatusOK, a.get("192.0.2.2:1234", nil).Code)
	assert.Equal(t, http.StatusTooManyRequests, a.getPath(ExportPath, "192.0.2.2:1234", nil).Code,
		"a clamped cost takes the whole limit: refused once any of it is used")
}

func testKey(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{User: UserFromHeader, Key: true})
	key := func(k string) map[string]string { return map[string]string{KeyHeader: k} }

	for range 5 {
		require.Equal(t, http.StatusOK, a.get("192.0.2.1:1234", key("alice")).Code)
	}
	d := a.last()
	assert.Equal(t, core.KeyCaller("alice"), d.Caller)
	assert.Equal(t, core.User, d.Caller.Kind(), "a key caller has the user limits")
	assert.Equal(t, "key:alice", d.Caller.String())
	require.Equal(t, http.StatusTooManyRequests, a.get("192.0.2.9:1", key("alice")).Code, "counted by key, whatever the address")

	w := a.get("192.0.2.1:1234", user("alice"))
	assert.Equal(t, http.StatusOK, w.Code, "the user id alice is not the key alice")
	assert.Regexp(t, `"api.user.min";r=4(,|$)`, w.Header().Get("RateLimit"))
	w = a.get("192.0.2.1:1234", nil)
	assert.Equal(t, http.StatusOK, w.Code, "the address is counted apart from its keys")
	assert.Regexp(t, `"api.anon.min";r=2(,|$)`, w.Header().Get("RateLimit"))
	w = a.get("192.0.2.1:1234", map[string]string{KeyHeader: "bob", UserHeader: "alice"})
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "key:bob", a.last().Caller.String(), "a key wins over the user")
}

func testSkipper(t *testing.T, build builder) {
	a := newApp(t, build, nil, Options{Skip: func(r *http.Request) bool { return r.Header.Get("X-Skip") == "yes" }})
	for i := range 10 {
		w := a.get("192.0.2.1:1234", map[string]string{"X-Skip": "yes"})
		assert.Equal(t, http.StatusInternalServerError, w.Code, "served, and the handler found no decision")
		assert.Equal(t, i+1, a.served())
		assert.Empty(t, w.Header().Get("RateLimit"))
	}
	w := a.get("192.0.2.1:1234", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Regexp(t, `"api.anon.min";r=2(,|$)`, w.Header().Get("RateLimit"), "skipped requests are not counted")
}

// trusted is the suite's proxy network.
var trusted = core.Networks{netip.MustParsePrefix("10.0.0.0/8")}

func testTrustedDirect(t *testing.T, build builder) {
	var ev events
	a := newAppWith(t, build, nil, func(c *core.Config) {
		c.TrustedProxies = trusted
		c.Observe = ev.observe
	}, Options{})

	// 10,000 requests straight to the application from 203.0.113.50, each
	// with a forged X-Forwarded-For: one caller.
	for i := range 10_000 {
		forged := "198.51.100." + strconv.Itoa(i%250) + ", 192.0.2." + strconv.Itoa(i/250)
		a.get("203.0.113.50:4000", map[string]string{"X-Forwarded-For": forged})
	}
	callers := map[core.Caller]int{}
	for _, s := range ev.list() {
		callers[s.caller]++
	}
	assert.Len(t, callers, 1, "counted as one caller")
	assert.Equal(t, 10_000, callers[core.NetworkCaller(netip.MustParsePrefix("203.0.113.50/32"))])
	assert.Equal(t, 3, a.served(), "only the limit's 3 requests were served")

	// Claiming a victim's address does not lock the victim out.
	for range 10 {
		a.get("203.0.113.51:4000", map[string]string{"X-Forwarded-For": "198.51.100.7"})
	}
	w := a.get("10.0.0.1:5555", map[string]string{"X-Forwarded-For": "198.51.100.7"})
	require.Equal(t, http.StatusOK, w.Code, "the victim, through the proxy")
	assert.Regexp(t, `"api.anon.min";r=2(,|$)`, w.Header().Get("RateLimit"))
	assert.Equal(t, "198.51.100.7", a.last().Caller.String())
}

func testTrustedWalk(t *testing.T, build builder) {
	a := newAppWith(t, build, nil, func(c *core.Config) {
		c.TrustedProxies = trusted
		c.NumProxies = new(2)
	}, Options{})
	for _, tt := range []struct {
		name, peer, forwarded, want string
	}{
		{name: "two proxies", peer: "10.0.0.1:1", forwarded: "6.6.6.6, 198.51.100.9, 10.0.0.2", want: "198.51.100.9"},
		{name: "stops at the first untrusted entry", peer: "10.0.0.1:1", forwarded: "6.6.6.6, 198.51.100.10", want: "198.51.100.10"},
		{name: "stops at NumProxies", peer: "10.0.0.1:1", forwarded: "10.0.0.5, 10.0.0.3, 10.0.0.2", want: "10.0.0.3"},
		{name: "peer outside", peer: "203.0.113.9:1", forwarded: "198.51.100.11", want: "203.0.113.9"},
		{name: "no header", peer: "10.0.0.1:1", forwarded: "", want: "10.0.0.1"},
	} {
		h := map[string]string{}
		if tt.forwarded != "" {
			h["X-Forwarded-For"] = tt.forwarded
		}
		require.Equal(t, http.StatusOK, a.get(tt.peer, h).Code, tt.name)
		assert.Equal(t, tt.want, a.last().Caller.String(), tt.name)
	}
}

// apiScopes returns scopes, or the default scopes when nil, with the scope
// "api" changed by set.
func apiScopes(scopes []core.Scope, set func(*core.Scope)) []core.Scope {
	if scopes == nil {
		scopes = core.DefaultScopes()
	}
	scopes = slices.Clone(scopes)
	for i := range scopes {
		if scopes[i].Name == "api" {
			set(&scopes[i])
		}
	}
	return scopes
}
