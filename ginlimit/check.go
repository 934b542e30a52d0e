package ginlimit

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/discard"
)

// CheckClientIP returns the W612 warning of [checks.ClientIP] when the
// client address that engine's ClientIP finds (as engine.SetTrustedProxies,
// TrustedPlatform and RemoteIPHeaders set it) differs from the one lim
// counts, as it does with Gin's default of trusting every proxy. Call it
// after configuring the engine, and log the result with
// [checks.Log].
func CheckClientIP(engine *gin.Engine, lim *core.Limiter) []checks.Message {
	return checks.ClientIP(lim, "Gin", func(r *http.Request) string {
		// Gin builds a context bound to an engine, whose ClientIP reads the
		// engine's proxy settings, only with CreateTestContextOnly; it serves
		// nothing, and the context writes to a writer that keeps nothing.
		c := gin.CreateTestContextOnly(&discard.ResponseWriter{}, engine)
		c.Request = r
		return c.ClientIP()
	})
}
