// Command echo is the README's Echo v4 quick start: GET /api/records,
// limited to 60 requests a minute and 1,000 a day for each anonymous
// caller. The README quotes it from its package clause on
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

	"github.com/labstack/echo/v4"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echolimit"
)

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
	limit, err := echolimit.New(echolimit.Config{Limiter: lim, User: func(c echo.Context) string { s, _ := c.Get("user").(string); return s }})
	if err != nil {
		log.Fatal(err)
	}
	e := echo.New()
	checks.Log(context.Background(), slog.Default(), echolimit.CheckClientIP(e, lim)) // W612 until e.IPExtractor agrees
	e.GET("/api/records", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]any{"records": []string{}}) }, limit)
	log.Fatal(e.Start(":" + cmp.Or(os.Getenv("PORT"), "8080"))) // :8080, or :$PORT if PORT is set
}
