package echolimit

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/discard"
)

// CheckClientIP returns the W612 warning of [checks.ClientIP] when the
// client address that e's RealIP finds (as e.IPExtractor says; without
// one, Echo believes X-Forwarded-For from anybody) differs from the one lim
// counts. Call it after configuring e, and log the result with
// [checks.Log].
func CheckClientIP(e *echo.Echo, lim *core.Limiter) []checks.Message {
	return checks.ClientIP(lim, "Echo", func(r *http.Request) string {
		return e.NewContext(r, &discard.ResponseWriter{}).RealIP()
	})
}
