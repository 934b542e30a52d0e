package main_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

// TestRPCParity sends the same JSON-RPC calls, at the same times, to the
// portal on Gin, Echo v4 and Echo v5, each with balances of its own, behind one
// proxy: the answers are the same, callers are told apart as for the API
// (the proxy's X-Forwarded-For entry, or the Bearer user), admins are never
// charged, and a dropped caller is served again once its balance decays.
func TestRPCParity(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	handlers := parityHandlers(t, portal.Options{NumProxies: new(1), Admins: []string{"root"}, Warn: 200, Drop: 400, Now: clock.Now})

	const ok, warned, overloaded = `{"result":{"status":"success"}}`, `{"result":{"status":"success","warning":"load"}}`, "Server is overloaded"
	type step struct {
		xff, user, method string
		advance           time.Duration
		status            int
		body              string
	}
	steps := []step{
		// A heavy call adds 3000/32 = 93: warned at the third (281 >=
		// 200), not again within that second (the load warning is not on
		// every response), warned again a second later, and dropped once
		// its balance is at the drop threshold before a call (the eighth).
		{xff: "192.0.2.1", method: "path_find", status: 200, body: ok},
		{xff: "198.51.100.1, 192.0.2.1", method: "ripple_path_find", status: 200, body: ok},
		{xff: "198.51.100.2, 192.0.2.1", method: "path_find", status: 200, body: warned},
		{xff: "192.0.2.1", method: "ping", status: 200, body: ok},
		{xff: "192.0.2.1", method: "ping", advance: time.Second, status: 200, body: warned},
		{xff: "192.0.2.1", method: "path_find", status: 200, body: ok},
		{xff: "192.0.2.1", method: "path_find", status: 200, body: ok},
		{xff: "192.0.2.1", method: "ledger", status: 503, body: overloaded},
		{xff: "192.0.2.2", method: "account_tx", status: 200, body: ok},
		{xff: "192.0.2.1", user: "alice", method: "path_find", status: 200, body: ok},
		{xff: "192.0.2.1", user: "root", method: "path_find", status: 200, body: ok},
		{xff: "192.0.2.1", method: "nonsense", status: 503, body: overloaded},
		// Silent for 40 s: the balance decays below both thresholds.
		{xff: "192.0.2.1", method: "ping", advance: 40 * time.Second, status: 200, body: ok},
	}
	for i := 0; i < 20; i++ {
		steps = append(steps, step{xff: "192.0.2.3", user: "root", method: "path_find", status: 200, body: ok})
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		answers := make([]string, len(handlers))
		for j, h := range handlers {
			req := httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(`{"method":"`+s.method+`","params":[{}]}`))
			req.RemoteAddr = "10.0.0.1:4000"
			req.Header.Set("X-Forwarded-For", s.xff)
			if s.user != "" {
				req.Header.Set("Authorization", "Bearer "+s.user)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			body, _ := io.ReadAll(w.Body)
			require.Equal(t, s.status, w.Code, "step %d (%+v), framework %d: %s", i, s, j, body)
			if s.status == http.StatusOK {
				assert.JSONEq(t, s.body, string(body), "step %d, framework %d", i, j)
				assert.Equal(t, strings.Contains(s.body, "load"), w.Header().Get("Ratescope-Warning") == "load", "step %d", i)
			} else {
				assert.Equal(t, s.body, string(body), "step %d, framework %d", i, j)
			}
			answers[j] = w.Header().Get("Ratescope-Warning") + " " + strings.TrimSpace(string(body))
		}
		assert.Equal(t, answers[0], answers[1], "step %d: Gin and Echo v4 answer alike", i)
		assert.Equal(t, answers[0], answers[2], "step %d: Gin and Echo v5 answer alike", i)
	}
}
