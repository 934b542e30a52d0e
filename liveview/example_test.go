package liveview_test

import (
	"crypto/subtle"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/liveview"
)

// Mounting the live view at /debug/limits, behind the application's own
// authentication (here a token in a header), with the reset buttons on.
// The view and its limiter are made by newView, the administrators told
// by isAdmin, and tryIt asks for the page: the examples for Gin, Echo v4
// and Echo v5 share them and show only how each mounts the view.
func Example() {
	view, lim := newView()
	mux := http.NewServeMux()
	mux.Handle("/debug/limits", requireAdmin(view))
	_ = lim    // ... and the application's routes, limited by lim
	tryIt(mux) // or: log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
	// Output:
	// GET, a stranger: 403
	// GET, an administrator: 200
	// POST, an administrator without the page's CSRF token: 403 {"error":"missing or wrong X-CSRF-Token"}
}

// newView returns a live view and the limiter it observes, with the
// view's reset buttons on.
func newView() (*liveview.View, *core.Limiter) {
	view, err := liveview.New(liveview.Config{})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}),
		NumProxies: new(1),
		Observe:    view.Observe, // core.Observers(metrics.Observe, view.Observe) with metrics too
	})
	if err != nil {
		log.Fatal(err)
	}
	view.AllowReset(lim) // optional: the reset buttons call lim.Reset
	return view, lim
}

// isAdmin reports whether r comes from an administrator: the
// application's own authentication, which the view leaves to it (here
// the token s3cret in the header X-Admin-Token).
func isAdmin(r *http.Request) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Admin-Token")), []byte("s3cret")) == 1
}

// requireAdmin serves with h only the requests of administrators
// (isAdmin), and answers the others 403 Forbidden.
func requireAdmin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAdmin(r) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// tryIt asks h for the view at /debug/limits as a stranger and as an
// administrator, and for a reset without the page's CSRF token, and
// prints the answers.
func tryIt(h http.Handler) {
	for _, ask := range []struct{ who, method, token string }{
		{who: "a stranger", method: http.MethodGet},
		{who: "an administrator", method: http.MethodGet, token: "s3cret"},
		{who: "an administrator without the page's CSRF token", method: http.MethodPost, token: "s3cret"},
	} {
		r := httptest.NewRequest(ask.method, "/debug/limits", nil)
		r.Header.Set("X-Admin-Token", ask.token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		out := fmt.Sprintf("%s, %s: %d", ask.method, ask.who, w.Code)
		if ask.method == http.MethodPost {
			out += " " + strings.TrimSpace(w.Body.String())
		}
		fmt.Println(out)
	}
}
