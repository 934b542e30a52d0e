package echo5limit

import (
	"github.com/labstack/echo/v5"
)

// GiveBackSuccess is a Config.GiveBack that gives back the units of every
// request whose handler answered with a 2xx status and returned no error:
// only the others (a sign-in refused with 401) count.
func GiveBackSuccess(c *echo.Context) bool {
	r, err := echo.UnwrapResponse(c.Response())
	return err == nil && r.Status >= 200 && r.Status < 300
}
