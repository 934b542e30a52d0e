// Command http is the net/http quick start: GET /api/records, limited to
// 60 requests a minute and 1,000 a day for each anonymous caller.
// docs/quick-starts.md quotes it from its package clause on
// (internal/doccheck), and the consumer test builds and runs that copy as
// written (internal/consumertest).
package main

import (
	"cmp"
	"context"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/httplimit"
)

// userKey is the context key where the application's session middleware
// leaves the signed-in user's id.
type userKey struct{}

func main() {
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}), // one process; redisstore for several
		Rates:      map[string]string{"api.anon": "60/min,1000/day", "api.user": "600/min,20000/day"},
		NumProxies: new(1), // one reverse proxy in front of the app
	})
	if err != nil {
		log.Fatal(err)
	}
	checks.Log(context.Background(), slog.Default(), checks.Run(context.Background(), lim.Config()))
	limit, err := httplimit.New(httplimit.Config{Limiter: lim, User: func(r *http.Request) string { s, _ := r.Context().Value(userKey{}).(string); return s }})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/records", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"records":[]}`))
	})))
	log.Fatal(http.ListenAndServe(":"+cmp.Or(os.Getenv("PORT"), "8080"), mux)) // :8080, or :$PORT if PORT is set
}
