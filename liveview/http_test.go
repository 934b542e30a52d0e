package liveview_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/liveview"
)

// get serves a GET of target and returns the answer.
func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return w
}

// between returns the text of body between open and the next close.
func between(t *testing.T, body, open, close string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, open)
	require.True(t, ok, "no %s in %s", open, body)
	in, _, ok := strings.Cut(rest, close)
	require.True(t, ok, "no %s after %s", close, open)
	return in
}

// cspHash returns the CSP source of an inline script or style.
func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func TestPageIsSelfContained(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{Refresh: 500 * time.Millisecond}, map[string]string{"api.anon": "1/min"})
	s.allow(t, "api", s.addr("203.0.113.7"), 4)
	w := get(t, s.view, "/debug/limits")
	body := w.Body.String()
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	csp := w.Header().Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none';")
	assert.Contains(t, csp, "connect-src 'self';")
	assert.Contains(t, csp, "script-src "+cspHash(between(t, body, "<script>", "</script>"))+";", "the inline script runs, nothing else")
	assert.Contains(t, csp, "style-src "+cspHash(between(t, body, "<style>", "</style>"))+";")
	assert.Equal(t, 1, strings.Count(body, "<script"), "one script, inline")
	assert.NotRegexp(t, regexp.MustCompile(`(src|href)="(https?:)?//`), body, "nothing from another origin")
	assert.NotContains(t, body, "style=", "no style attribute, which the policy would block")
	assert.Contains(t, body, `data-refresh="500"`)
	assert.Contains(t, body, `<li data-outcome="denied" data-total="3">`)
	assert.Contains(t, body, `<tr data-scope="api" data-ref="`+refOf(t, s.addr("203.0.113.7"))+`" data-refusals="3">`)
	assert.Contains(t, body, `<polyline fill="none" stroke="#c62828"`)
	assert.Equal(t, 7, strings.Count(body, `<li data-outcome=`), "a legend line for each outcome")
	assert.NotContains(t, body, `fill=""`, "every outcome has a colour")
	assert.NotContains(t, body, "</svg>: ", "and a label")
	assert.Contains(t, body, `disabled title="reset is not enabled"`)

	main := get(t, s.view, "/debug/limits?format=main").Body.String()
	assert.Contains(t, main, `data-caller="203.0.113.7"`)
	assert.NotContains(t, main, "<script")
}

// TestFramingAndPolicyOnEveryPage: the fragment ?format=main is HTML with
// the callers' ids, as the page is: it has the page's
// Content-Security-Policy and frame protection.
func TestFramingAndPolicyOnEveryPage(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "1/min"})
	s.allow(t, "api", s.addr("203.0.113.7"), 2)
	for _, tt := range []struct {
		name   string
		target string
	}{
		{name: "page", target: "/debug/limits"},
		{name: "html", target: "/debug/limits?format=html"},
		{name: "fragment", target: "/debug/limits?format=main"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := get(t, s.view, tt.target)
			assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
			assert.Contains(t, w.Header().Get("Content-Security-Policy"), "default-src 'none';")
			assert.Contains(t, w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'")
			assert.Equal(t, "DENY", w.Header().Get("X-Frame-Options"))
			assert.Equal(t, "no-referrer", w.Header().Get("Referrer-Policy"))
		})
	}
}

// TestPageFetchesWithoutURLCredentials: a page opened at a URL with
// credentials (http://operator:s3cret@host/debug/limits) has them in its
// base URL, and fetch refuses any URL resolved against it; the script
// builds its URLs from location.origin and location.pathname, which carry
// none, and every fetch uses them.
func TestPageFetchesWithoutURLCredentials(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, nil)
	script := between(t, get(t, s.view, "/").Body.String(), "<script>", "</script>")
	assert.Contains(t, script, "var here = location.origin + location.pathname;")
	fetches := regexp.MustCompile(`fetch\(([^,)]*)`).FindAllStringSubmatch(script, -1)
	require.Len(t, fetches, 2, "the fragment and the reset")
	for _, f := range fetches {
		assert.Regexp(t, `^here( \+ '\?format=main')?$`, f[1], "a URL made from here")
	}
	assert.NotContains(t, script, "location.href")
}

// TestPageWording: the page says how exact its counts are in one plain
// sentence, and writes every time in one zone, the view clock's, the
// status line's too (from the fragment, not the browser's clock).
func TestPageWording(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{Callers: 2}, map[string]string{"api.anon": "1/hour"})
	s.allow(t, "api", s.addr("192.0.2.1"), 1+1)
	page := get(t, s.view, "/").Body.String()
	assert.Contains(t, page, "2 callers kept. Every count is exact.")
	s.allow(t, "api", s.addr("192.0.2.2"), 1+3)
	s.allow(t, "api", s.addr("192.0.2.3"), 1+1) // takes the place of 192.0.2.1
	page = get(t, s.view, "/").Body.String()
	assert.Contains(t, page, "A count marked ±E may include up to E refusals of other callers, and no count more than 2.")
	assert.Contains(t, page, "2 ±1")
	assert.NotContains(t, page, "never more than")

	assert.Contains(t, page, `<p class="muted" id="now" data-clock="2030-01-07 09:00:00 UTC">`)
	script := between(t, page, "<script>", "</script>")
	assert.NotContains(t, script, "new Date", "the status line's time is the view's")
	assert.Contains(t, script, "dataset.clock")
}

func TestPolylinePoints(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "1000/min"})
	ip := s.addr("192.0.2.1")
	s.allow(t, "api", ip, 4)
	s.clock.Advance(time.Second)
	s.allow(t, "api", ip, 2)
	page := get(t, s.view, "/").Body.String()
	// Zero until the second before last, 4 (the peak, at the top), 2 now,
	// on a log scale: 40 - 38·ln(1+2)/ln(1+4).
	assert.Contains(t, page, `data-outcome="allowed" points="0,40.0 897,40.0 898,2.0 899,14.1"`)
}

// TestChartStrips: each outcome with decisions has a strip of its own, so
// that lines close to each other do not hide one another, on one log
// scale, so that a burst of 160 refusals in a second leaves a steady 5 a
// second a third of the strip high, not one or two units of 40.
func TestChartStrips(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "1/hour"})
	ip := s.addr("192.0.2.1")
	s.allow(t, "api", ip, 1+160)
	for range 10 {
		s.clock.Advance(time.Second)
		s.allow(t, "api", ip, 5)
	}
	page := get(t, s.view, "/").Body.String()
	assert.Equal(t, 2, strings.Count(page, `<div class="strip" data-outcome=`), "allowed and refused, the outcomes seen")
	refused := between(t, page, `<div class="strip" data-outcome="denied">`, `</div>`)
	assert.Contains(t, refused, "refused, peak 160/s")
	assert.Equal(t, 1, strings.Count(refused, "<polyline"), "one line a strip")
	// 40 - 38·ln(1+160)/ln(1+160) at the burst, 40 - 38·ln(1+5)/ln(1+160) after.
	assert.Contains(t, refused, `points="0,40.0 888,40.0 889,2.0 890,26.6 899,26.6"`)
	assert.Contains(t, between(t, page, `<div class="strip" data-outcome="allowed">`, `</div>`), "allowed, peak 1/s")
}

// token returns the CSRF token of the view's page.
func token(t *testing.T, h http.Handler) string {
	t.Helper()
	tok := between(t, get(t, h, "/").Body.String(), `<meta name="liveview-token" content="`, `"`)
	require.Len(t, tok, 64)
	return tok
}

// post asks h to reset the caller of row reference ref in scope with the
// token tok and the header Sec-Fetch-Site site (if not empty).
func post(h http.Handler, tok, site, scope, ref string) *httptest.ResponseRecorder {
	form := url.Values{"scope": {scope}, "ref": {ref}}
	r := httptest.NewRequest(http.MethodPost, "/debug/limits", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if tok != "" {
		r.Header.Set("X-CSRF-Token", tok) // the header the how-to and the page's script name
	}
	if site != "" {
		r.Header.Set("Sec-Fetch-Site", site)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// refOf returns the row reference of c: its kind and the bytes of its
// user id or network, in base64url (Refused.Ref).
func refOf(t *testing.T, c core.Caller) string {
	t.Helper()
	if c.User() != "" {
		return "user:" + base64.RawURLEncoding.EncodeToString([]byte(c.User()))
	}
	if !c.Network().IsValid() {
		return "anon:"
	}
	b, err := c.Network().MarshalBinary()
	require.NoError(t, err)
	return "anon:" + base64.RawURLEncoding.EncodeToString(b)
}

func TestReset(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "2/min", "api.user": "2/min"})
	ip, eve := s.addr("203.0.113.7"), s.user("eve")
	s.allow(t, "api", ip, 3)
	s.allow(t, "api", eve, 3)
	tok := token(t, s.view)

	assert.Equal(t, http.StatusForbidden, post(s.view, tok, "same-origin", "api", refOf(t, ip)).Code, "before AllowReset")
	s.view.AllowReset(s.lim)
	assert.True(t, s.view.Snapshot().ResetAllowed)
	assert.NotContains(t, get(t, s.view, "/").Body.String(), "disabled title")

	refused := []struct {
		name   string
		tok    string
		site   string
		scope  string
		ref    string
		status int
	}{
		{name: "no token", site: "same-origin", scope: "api", ref: refOf(t, ip), status: http.StatusForbidden},
		{name: "wrong token", tok: strings.Repeat("0", 64), scope: "api", ref: refOf(t, ip), status: http.StatusForbidden},
		{name: "another site", tok: tok, site: "cross-site", scope: "api", ref: refOf(t, ip), status: http.StatusForbidden},
		{name: "caller not listed", tok: tok, scope: "api", ref: refOf(t, s.addr("203.0.113.8")), status: http.StatusNotFound},
		{name: "scope not listed", tok: tok, scope: "search", ref: refOf(t, ip), status: http.StatusNotFound},
		{name: "a printed caller", tok: tok, scope: "api", ref: "203.0.113.7", status: http.StatusBadRequest},
		{name: "not base64url", tok: tok, scope: "api", ref: "user:e v e", status: http.StatusBadRequest},
		{name: "no network", tok: tok, scope: "api", ref: "anon:AAAA", status: http.StatusBadRequest},
		{name: "empty user", tok: tok, scope: "api", ref: "user:", status: http.StatusBadRequest},
	}
	for _, tt := range refused {
		w := post(s.view, tt.tok, tt.site, tt.scope, tt.ref)
		assert.Equal(t, tt.status, w.Code, tt.name)
		assert.Contains(t, w.Body.String(), `{"error":`, tt.name)
	}
	d, err := s.lim.Allow(context.Background(), "api", ip)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "nothing reset yet")

	s.clock.Advance(time.Second)
	w := post(s.view, tok, "same-origin", "api", refOf(t, ip))
	require.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
	d, err = s.lim.Allow(context.Background(), "api", ip)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome, "served again")
	d, err = s.lim.Allow(context.Background(), "api", eve)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "another caller is not reset")

	snap := s.view.Snapshot()
	require.Len(t, snap.Refused, 2)
	assert.Equal(t, "203.0.113.7", snap.Refused[1].Caller)
	assert.Equal(t, s.clock.Now(), snap.Refused[1].Reset)
	assert.True(t, snap.Refused[0].Reset.IsZero())
	assert.Contains(t, get(t, s.view, "/").Body.String(), "reset 2030-01-07 09:00:01 UTC")

	s.view.AllowReset(nil)
	assert.Equal(t, http.StatusForbidden, post(s.view, tok, "", "api", refOf(t, eve)).Code, "disabled again")
}

// TestResetOnlyListed: a caller the view keeps but does not list (here
// past Config.Listed) cannot be reset through it, as the package says.
func TestResetOnlyListed(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{Listed: 1}, map[string]string{"api.anon": "1/min"})
	s.view.AllowReset(s.lim)
	listed, unlisted := s.addr("192.0.2.1"), s.addr("192.0.2.2")
	s.allow(t, "api", listed, 1+3)
	s.allow(t, "api", unlisted, 1+1)
	snap := s.view.Snapshot()
	require.Len(t, snap.Refused, 1)
	require.Equal(t, refOf(t, listed), snap.Refused[0].Ref)
	tok := token(t, s.view)

	w := post(s.view, tok, "same-origin", "api", refOf(t, unlisted))
	assert.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
	d, err := s.lim.Allow(context.Background(), "api", unlisted)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "not reset")
	w = post(s.view, tok, "same-origin", "api", refOf(t, listed))
	assert.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
}

// TestResetNamesRowsExactly: every listed row resets its own caller and
// no other, by the reference the JSON and the page give, whatever bytes
// its id holds (NUL, CR, CRLF, invalid UTF-8, which HTML and JSON do not
// keep) and though callers write alike: the user id "203.0.113.9" and the
// anonymous caller 203.0.113.9, the user id "key:k" and the caller counted
// by key k.
func TestResetNamesRowsExactly(t *testing.T) {
	t.Parallel()
	s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "1/min", "api.user": "1/min"})
	s.view.AllowReset(s.lim)
	callers := []struct {
		name   string
		caller core.Caller
	}{
		{name: "NUL", caller: s.user("a\x00b")},
		{name: "CR", caller: s.user("a\rb")},
		{name: "CRLF", caller: s.user("a\r\nb")},
		{name: "invalid UTF-8", caller: s.user("\xff\xfe")},
		{name: "a user written as an address", caller: s.user("203.0.113.9")},
		{name: "the address", caller: s.addr("203.0.113.9")},
		{name: "a user written as a key", caller: s.user("key:k")},
		{name: "the key", caller: s.lim.Caller(s.req, core.KeyCaller("k"))},
		{name: "an IPv6 network", caller: s.addr("2001:db8::1")},
	}
	for _, c := range callers {
		s.allow(t, "api", c.caller, 2)
	}
	var snap liveview.Snapshot
	require.NoError(t, json.Unmarshal(get(t, s.view, "/?format=json").Body.Bytes(), &snap))
	require.Len(t, snap.Refused, len(callers))
	page := get(t, s.view, "/").Body.String()
	tok := token(t, s.view)
	for i, c := range callers {
		ref := refOf(t, c.caller)
		assert.Contains(t, page, `data-scope="api" data-ref="`+ref+`"`, c.name)
		assert.True(t, slices.ContainsFunc(snap.Refused, func(r liveview.Refused) bool { return r.Ref == ref }), "%s: the JSON's row", c.name)
		s.clock.Advance(time.Second)
		w := post(s.view, tok, "same-origin", "api", ref)
		require.Equal(t, http.StatusNoContent, w.Code, "%s: %s", c.name, w.Body.String())
		for j, other := range callers[i:] {
			d, err := s.lim.Allow(context.Background(), "api", other.caller)
			require.NoError(t, err)
			if j == 0 {
				assert.Equal(t, core.OutcomeAllowed, d.Outcome, "%s: reset", c.name)
			} else {
				assert.Equal(t, core.OutcomeDenied, d.Outcome, "%s: %s not reset", c.name, other.name)
			}
		}
	}
}
