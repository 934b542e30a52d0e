package main_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

// liveFigures is what a script reads of the live view's JSON answer
// (GET ?format=json), as docs/reference.md describes it.
type liveFigures struct {
	Refused      []liveRow `json:"refused"`
	ResetAllowed bool      `json:"reset_allowed"`
}

// liveRow is a caller of liveFigures.Refused, with every field of a row.
type liveRow struct {
	Scope        string    `json:"scope"`
	Caller       string    `json:"caller"`
	Ref          string    `json:"ref"`
	Kind         string    `json:"kind"`
	Refusals     int64     `json:"refusals"`
	Error        int64     `json:"error"`
	First        time.Time `json:"first"`
	Last         time.Time `json:"last"`
	Reset        time.Time `json:"reset"`
	Limit        string    `json:"limit"`
	Until        time.Time `json:"until"`
	ResetPending bool      `json:"reset_pending"`
}

// TestLiveViewParity runs the live view's route on Gin, Echo v4 and Echo
// v5: 401 without the admin token, its figures as JSON with it (the same
// on the three, the refused caller listed), 403 for a reset without the
// page's CSRF token, 405 for another method; and the route is absent
// without -admin-token.
func TestLiveViewParity(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	o := portal.Options{
		Rates:      core.RateTable{"api.anon": "3/min,100/day"},
		NumProxies: new(1),
		AdminToken: "s3cret",
		Now:        clock.Now,
	}
	handlers := parityHandlers(t, o)
	const unauthorized = `{"error":"missing or wrong X-Admin-Token (or Basic password)"}`
	steps := []parityStep{
		{path: portal.LiveViewRoute, xff: "192.0.2.9", status: 401, reply: unauthorized, limit: "-"},
		{path: portal.LiveViewRoute + "?format=json", token: "guess", xff: "192.0.2.9", status: 401, reply: unauthorized, limit: "-"},
		{path: "/api/records", xff: "192.0.2.9", status: 200},
		{path: "/api/records", xff: "192.0.2.9", status: 200},
		{path: "/api/records", xff: "192.0.2.9", status: 200},
		{path: "/api/records", xff: "192.0.2.9", status: 429, advance: time.Second},
		{path: portal.LiveViewRoute + "?format=json", token: "s3cret", xff: "192.0.2.9", status: 200, limit: "-"},
		{method: http.MethodPost, path: portal.LiveViewRoute, token: "s3cret", xff: "192.0.2.9", status: 403, reply: `{"error":"missing or wrong X-CSRF-Token"}`, limit: "-"},
		{method: http.MethodDelete, path: portal.LiveViewRoute, token: "s3cret", xff: "192.0.2.9", status: 405, limit: "-"},
	}
	runParity(t, clock, handlers, steps)

	for i, h := range handlers {
		req := httptest.NewRequest(http.MethodGet, portal.LiveViewRoute+"?format=json", nil)
		req.SetBasicAuth("operator", "s3cret")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusOK, w.Code, frameworks[i])
		var snap liveFigures
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &snap), frameworks[i])
		assert.True(t, snap.ResetAllowed, frameworks[i])
		if assert.Len(t, snap.Refused, 1, frameworks[i]) {
			assert.Equal(t, liveRow{Scope: "api", Caller: "192.0.2.9", Ref: "anon:wAACCSA", Kind: "anon", Refusals: 1,
				First: storetest.Start.Add(time.Second), Last: storetest.Start.Add(time.Second),
				// Refused by the minute limit, which has room again a
				// minute after the three requests it counted.
				Limit: "3/min", Until: storetest.Start.Add(time.Minute)}, snap.Refused[0], frameworks[i])
		}
	}

	o.AdminToken = ""
	absent := parityHandlers(t, o)
	runParity(t, clock, absent, []parityStep{
		{path: portal.LiveViewRoute, token: "s3cret", xff: "192.0.2.9", status: 404, limit: "-"},
		{method: http.MethodPost, path: portal.LiveViewRoute, token: "s3cret", xff: "192.0.2.9", status: 404, limit: "-"},
	})
}
