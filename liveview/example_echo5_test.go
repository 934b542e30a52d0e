package liveview_test

import (
	"log"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/echo5limit"
)

// The live view of [Example] on Echo v5, at /debug/limits for GET and
// POST, behind the application's own check of an administrator.
func Example_echo5() {
	view, lim := newView()
	admin := echo.WrapMiddleware(requireAdmin)
	limit, err := echo5limit.New(echo5limit.Config{Limiter: lim})
	if err != nil {
		log.Fatal(err)
	}
	e := echo.New()
	e.Match([]string{http.MethodGet, http.MethodPost}, "/debug/limits", echo.WrapHandler(view), admin)
	e.GET("/api/records", func(c *echo.Context) error { return c.JSON(http.StatusOK, map[string][]string{"records": {}}) }, limit)
	tryIt(e) // or: log.Fatal(e.Start("127.0.0.1:8080"))
	// Output:
	// GET, a stranger: 403
	// GET, an administrator: 200
	// POST, an administrator without the page's CSRF token: 403 {"error":"missing or wrong X-CSRF-Token"}
}
