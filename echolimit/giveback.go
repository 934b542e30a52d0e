package echolimit

import (
	"github.com/labstack/echo/v4"

	"github.com/ratescope/ratescope/core"
)

// GiveBackSuccess is a Config.GiveBack that gives back the units of every
// request whose handler answered with a 2xx status and returned no error:
// only the others (a sign-in refused with 401) count.
func GiveBackSuccess(c echo.Context) bool {
	s := c.Response().Status
	return s >= 200 && s < 300
}

// giveBack gives d's units back if Config.GiveBack says so. The give-back
// outlives a client that hung up once its request was handled (see
// [core.Limiter.GiveBack]).
func (m *limiter) giveBack(c echo.Context, d *core.Decision) {
	if m.cfg.GiveBack(c) {
		_ = m.cfg.Limiter.GiveBack(c.Request().Context(), d) // logged by the Limiter; the units stay counted
	}
}
