package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/httplimit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

// userKey is the context key where the session middleware of the suite's
// UserFromContext leaves the user id.
type userKey struct{}

func TestSuite(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, o adaptertest.Options) http.Handler {
		cfg := httplimit.Config{Limiter: o.Limiter, Cost: o.Cost, RouteCosts: o.RouteCosts, KeepDecision: !o.DropDecision}
		if o.Key {
			cfg.Key = func(r *http.Request) string { return r.Header.Get(adaptertest.KeyHeader) }
		}
		if o.Plan {
			cfg.Plan = func(r *http.Request) string { return r.Header.Get(adaptertest.PlanHeader) }
		}
		if o.Skip != nil {
			t.Skip("httplimit has no Skipper: a handler that is never limited is not wrapped")
		}
		session := func(h http.Handler) http.Handler { return h }
		switch o.User {
		case adaptertest.UserFromHeader:
			cfg.User = func(r *http.Request) string { return r.Header.Get(adaptertest.UserHeader) }
		case adaptertest.UserFromContext:
			session = func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, r.Header.Get(adaptertest.UserHeader))))
				})
			}
			cfg.User = func(r *http.Request) string { id, _ := r.Context().Value(userKey{}).(string); return id }
		}
		if o.Exempt != nil {
			cfg.Exempt = func(_ *http.Request, caller core.Caller) bool { return o.Exempt(caller) }
		}
		if o.Problem {
			cfg.DenyHandler = httplimit.DenyProblem
		}
		if o.Deny != nil {
			cfg.DenyHandler = func(w http.ResponseWriter, _ *http.Request, d *core.Decision) {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(o.Deny(d)))
			}
		}
		if o.StoreError != nil {
			cfg.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) bool {
				o.StoreError(err)
				w.WriteHeader(http.StatusServiceUnavailable)
				return false
			}
		}
		if o.Login != nil {
			cfg.GiveBack = func(_ *http.Request, status int) bool { return status < 400 }
		}
		limit, err := httplimit.New(cfg)
		require.NoError(t, err)
		handle := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, ok := httplimit.Decision(r)
			o.Handler(w, d, ok)
		})
		mux := http.NewServeMux()
		mux.Handle(adaptertest.Path, session(limit(handle)))
		mux.Handle(adaptertest.ExportPath, session(limit(handle)))
		if o.Login != nil {
			mux.Handle("POST "+adaptertest.LoginPath, session(limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				d, _ := httplimit.Decision(r)
				o.Login(w, r, d)
			}))))
		}
		return mux
	})
}

func TestDenyJSON(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	httplimit.DenyJSON(w, httptest.NewRequest(http.MethodGet, "/", nil), &core.Decision{RetryAfter: 1500 * time.Millisecond})
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "application/json; charset=utf-8", w.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"detail":"Request was throttled. Expected available in 2 seconds.","retry_after":2}`, w.Body.String())
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	lim := adaptertest.NewLimiter(t, storetest.NewClock(storetest.Start))
	for _, tc := range []struct {
		name string
		cfg  httplimit.Config
		want string
	}{
		{name: "no limiter", cfg: httplimit.Config{}, want: "httplimit: no Limiter"},
		{name: "unknown scope", cfg: httplimit.Config{Limiter: lim, Scope: "nope"}, want: `httplimit: ratescope: unknown scope "nope"`},
		{name: "negative cost", cfg: httplimit.Config{Limiter: lim, Cost: -1}, want: "cost -1"},
		{name: "route cost below 1", cfg: httplimit.Config{Limiter: lim, RouteCosts: map[string]int64{"/api/export": 0}}, want: `cost 0 of route "/api/export"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := httplimit.New(tc.cfg)
			require.Error(t, err)
			assert.Nil(t, h)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, err, tc.cfg.Validate())
		})
	}
}

func TestDecisionWithoutMiddleware(t *testing.T) {
	t.Parallel()
	d, ok := httplimit.Decision(httptest.NewRequest(http.MethodGet, "/", nil))
	assert.False(t, ok)
	assert.Nil(t, d)
}
