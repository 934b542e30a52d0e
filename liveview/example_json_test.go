package liveview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/liveview"
)

// A script reads the view's figures as JSON (GET ?format=json), here
// the fields it needs of the series and of the callers refused most.
func ExampleView_ServeHTTP_json() {
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
		NumProxies: new(0),
		Now:        clock.Now,
		Observe:    view.Observe,
	})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	alice := lim.Caller(r, core.UserCaller("alice")) // the signed-in user alice
	for range 5 {
		_, _ = lim.Allow(context.Background(), "api", alice)
	}
	w := httptest.NewRecorder()
	view.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/limits?format=json", nil))
	var figures struct {
		Series []struct {
			Scope, Kind, Outcome string
			Total                int64
		}
		Refused []struct {
			Scope, Caller string
			Refusals      int64
			Last          time.Time
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &figures); err != nil {
		panic(err)
	}
	for _, s := range figures.Series {
		if s.Total > 0 {
			fmt.Println(s.Scope, s.Kind, s.Outcome, s.Total)
		}
	}
	for _, r := range figures.Refused {
		fmt.Println(r.Scope, r.Caller, r.Refusals, r.Last.Format(time.TimeOnly))
	}
	// Output:
	// api user allowed 2
	// api user denied 3
	// api alice 3 09:00:00
}
