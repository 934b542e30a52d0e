package liveview_test

import (
	"crypto/subtle"
	"log"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echo5limit"
	"github.com/ratescope/ratescope/liveview"
)

// The live view on Echo v5, at /debug/limits for GET and POST, behind the
// application's own check of an administrator (here a token in a header).
func Example_echo5() {
	view, err := liveview.New(liveview.Config{})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}),
		NumProxies: core.Proxies(1),
		Observe:    view.Observe,
	})
	if err != nil {
		log.Fatal(err)
	}
	view.AllowReset(lim)
	admin := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if subtle.ConstantTimeCompare([]byte(c.Request().Header.Get("X-Admin-Token")), []byte("s3cret")) != 1 {
				return echo.NewHTTPError(http.StatusForbidden, "forbidden")
			}
			return next(c)
		}
	}
	e := echo.New()
	e.Match([]string{http.MethodGet, http.MethodPost}, "/debug/limits", echo.WrapHandler(view), admin)
	e.GET("/api/records", func(c *echo.Context) error { return c.JSON(http.StatusOK, map[string][]string{"records": {}}) }, echo5limit.Must(echo5limit.New(echo5limit.Config{Limiter: lim})))
	log.Fatal(e.Start("127.0.0.1:8080"))
}
