package core_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// Never limit the office network nor the monitoring service's account,
// read from text as flags or the environment give them. Anyone else is
// limited: the exempt callers are served uncounted, with no RateLimit
// headers, and seen by the hook as "exempt".
func ExampleConfig_exemptNetworks() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	office, err := core.ParseNetworks("198.51.100.0/24, 2001:db8:1::/48")
	if err != nil {
		panic(err)
	}
	lim, err := core.New(core.Config{
		Store:          store,
		Rates:          map[string]string{"api.anon": "1/min,100/day", "api.user": "1/min,100/day"},
		NumProxies:     new(1), // the address is the proxy's entry in X-Forwarded-For
		ExemptNetworks: office,
		ExemptUsers:    []string{"monitor"},
	})
	if err != nil {
		panic(err)
	}
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	if err != nil {
		panic(err)
	}
	for _, who := range []struct{ addr, user string }{
		{"198.51.100.7", ""}, {"198.51.100.7", "alice"}, {"192.0.2.1", "monitor"}, {"192.0.2.1", "alice"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		r.RemoteAddr = "10.0.0.1:443"
		r.Header.Set("X-Forwarded-For", who.addr)
		var t core.Ticket
		for range 2 {
			g.Check(context.Background(), &t, core.Call{Caller: lim.Caller(r, core.UserCaller(who.user)), Header: http.Header{}})
		}
		fmt.Printf("%s %q: second request %s\n", who.addr, who.user, t.Decision().Outcome)
	}
	// Output:
	// 198.51.100.7 "": second request exempt
	// 198.51.100.7 "alice": second request exempt
	// 192.0.2.1 "monitor": second request exempt
	// 192.0.2.1 "alice": second request denied
}

// downStore stands for a store that cannot be reached.
type downStore struct{}

func (downStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) { return downStore{}, nil }

var errDown = errors.New("connection refused")

func (downStore) Take(context.Context, core.Key, int64, time.Time) (core.Result, error) {
	return core.Result{}, errDown
}

func (downStore) GiveBack(context.Context, core.Key, int64, int64) error { return errDown }

func (downStore) Reset(context.Context, core.Key, time.Time) error { return errDown }

// Refuse sign-ins while the store fails, and keep serving the API: the
// scope "login" fails closed. Its refusal is a 503 with Retry-After (the
// Redis store's breaker back-off, or one second), Outcome failed_closed.
func ExampleConfig_failClosed() {
	login := core.Scope{Name: "login", Anon: []core.Rate{core.PerMinute(5)}, User: []core.Rate{core.PerMinute(5)}, FailMode: core.FailClosed}
	lim, err := core.New(core.Config{
		Store:      downStore{},
		Scopes:     append(core.DefaultScopes(), login),
		NumProxies: new(0),
		Logger:     slog.New(slog.DiscardHandler), // the failures are logged at most once per 10s
	})
	if err != nil {
		panic(err)
	}
	for _, scope := range []string{"api", "login"} {
		d, err := lim.Allow(context.Background(), scope, core.UserCaller("alice"))
		if err != nil {
			panic(err)
		}
		h := http.Header{}
		d.SetHeaders(h)
		fmt.Printf("%s %s %d Retry-After=%q\n", scope, d.Outcome, d.Status(), h.Get("Retry-After"))
		if !d.Allowed {
			fmt.Println(" ", d.DenyBody().Detail)
		}
	}
	// Output:
	// api failed_open 200 Retry-After=""
	// login failed_closed 503 Retry-After="1"
	//   Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.
}
