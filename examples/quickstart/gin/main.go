// Command gin is the README's Gin quick start: GET /api/records,
// limited to 60 requests a minute and 1,000 a day for each anonymous
// caller. The README quotes it from its package clause on
// (internal/doccheck), and the consumer test builds and runs that copy as
// written (internal/consumertest).
package main

import (
	"context"
	"log"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
)

func main() {
	r, lim := newServer()
	checks.Log(context.Background(), slog.Default(), checks.Run(context.Background(), lim.Config()))
	checks.Log(context.Background(), slog.Default(), ginlimit.CheckClientIP(r, lim))
	log.Fatal(r.Run()) // :8080, or :$PORT if PORT is set
}

// newServer returns the engine and its limiter. Both read the client's
// address from X-Forwarded-For only when a proxy of 10.0.0.0/8 sends it.
func newServer() (*gin.Engine, *core.Limiter) {
	proxies := []string{"10.0.0.0/8"} // your reverse proxies' networks
	trusted, err := core.ParseNetworks(strings.Join(proxies, ","))
	if err != nil {
		log.Fatal(err)
	}
	lim, err := core.New(core.Config{
		Store:          memstore.New(memstore.Config{}), // one process; redisstore for several
		Rates:          map[string]string{"api.anon": "60/min,1000/day", "api.user": "600/min,20000/day"},
		TrustedProxies: trusted,
	})
	if err != nil {
		log.Fatal(err)
	}
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim, User: func(c *gin.Context) string { return c.GetString("user") }})
	if err != nil {
		log.Fatal(err)
	}
	r := gin.Default()
	if err := r.SetTrustedProxies(proxies); err != nil { // Gin trusts every proxy by default
		log.Fatal(err)
	}
	r.GET("/api/records", limit, func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"records": []string{}}) })
	return r, lim
}
