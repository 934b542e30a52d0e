package liveview_test

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/liveview"
)

// Mounting the live view at /debug/limits, behind the application's own
// authentication (here a token in a header), with the reset buttons on.
func Example() {
	view, err := liveview.New(liveview.Config{})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}),
		NumProxies: core.Proxies(1),
		Observe:    view.Observe, // core.Observers(metrics.Observe, view.Observe) with metrics too
	})
	if err != nil {
		log.Fatal(err)
	}
	view.AllowReset(lim) // optional: the reset buttons call lim.Reset
	mux := http.NewServeMux()
	mux.Handle("/debug/limits", requireToken("s3cret", view))
	_ = lim // ... and the application's routes, limited by lim
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

// requireToken serves only requests whose X-Admin-Token header is token:
// the application's own authentication, which the view leaves to it.
func requireToken(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Admin-Token")), []byte(token)) != 1 {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func ExampleView_Snapshot() {
	clock := storetest.NewClock(time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC))
	view, err := liveview.New(liveview.Config{Now: clock.Now})
	if err != nil {
		panic(err)
	}
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.user": "2/min"},
		NumProxies: core.Proxies(0),
		Now:        clock.Now,
		Observe:    view.Observe,
	})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	alice := lim.Caller(r, "", "alice") // the signed-in user alice
	for range 5 {
		_, _ = lim.Allow(context.Background(), "api", alice)
	}
	snap := view.Snapshot()
	for _, s := range snap.Series {
		if s.Total > 0 {
			fmt.Println(s.Scope, s.Kind, s.Outcome, s.Total)
		}
	}
	for _, r := range snap.Refused {
		fmt.Println(r.Scope, r.Caller, r.Refusals, r.Last.Format(time.TimeOnly))
	}
	// Output:
	// api user allowed 2
	// api user denied 3
	// api alice 3 09:00:00
}
