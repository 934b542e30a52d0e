package httplimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/httplimit"
)

// Limit a route of http.ServeMux to 2 requests a minute for each anonymous
// caller: the third is answered 429 with Retry-After, and the handler does
// not run.
func Example() {
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}),
		Rates:      map[string]string{"api.anon": "2/min", "api.user": "20/min"},
		NumProxies: new(0),
	})
	if err != nil {
		log.Fatal(err)
	}
	limit, err := httplimit.New(httplimit.Config{Limiter: lim})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/records", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"records":[]}`)
	})))
	for range 3 {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		mux.ServeHTTP(w, r)
		fmt.Printf("%d Retry-After=%q\n", w.Code, w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 Retry-After=""
	// 200 Retry-After=""
	// 429 Retry-After="60"
}
