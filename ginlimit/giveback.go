package ginlimit

import (
	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
)

// GiveBackSuccess is a Config.GiveBack that gives back the units of every
// request answered with a 2xx status: only the others (a sign-in refused
// with 401) count.
func GiveBackSuccess(c *gin.Context) bool {
	s := c.Writer.Status()
	return s >= 200 && s < 300
}

// serveGivingBack runs the handlers after the middleware, then gives d's
// units back if Config.GiveBack says so. The give-back outlives a
// client that hung up once its request was handled (see
// [core.Limiter.GiveBack]).
func (m *middleware) serveGivingBack(c *gin.Context, d *core.Decision) {
	c.Next()
	if m.cfg.GiveBack(c) {
		_ = m.cfg.Limiter.GiveBack(c.Request.Context(), d) // logged by the Limiter; the units stay counted
	}
}
