package echolimit

import (
	"github.com/labstack/echo/v4"
)

// GiveBackSuccess is a Config.GiveBack that gives back the units of every
// request whose handler answered with a 2xx status and returned no error:
// only the others (a sign-in refused with 401) count.
func GiveBackSuccess(c echo.Context) bool {
	s := c.Response().Status
	return s >= 200 && s < 300
}
