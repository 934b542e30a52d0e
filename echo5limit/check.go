package echo5limit

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/discard"
)

// CheckClientIP returns the W612 warning of [checks.ClientIP] when the
// client address that e's RealIP finds (as e.IPExtractor says) differs
// from the one lim counts. Without an IPExtractor, Echo v5 (since v5.1)
// takes the peer address and ignores X-Forwarded-For, so behind a proxy
// its RealIP is the proxy for every caller while ratescope, told the
// proxies by NumProxies or TrustedProxies, counts the callers: W612 until
// e.IPExtractor trusts the same proxies (echo.ExtractIPFromXFFHeader with
// echo.TrustIPRange). Call it after configuring e, and log the result with
// [checks.Log].
func CheckClientIP(e *echo.Echo, lim *core.Limiter) []checks.Message {
	return checks.ClientIP(lim, "Echo v5", func(r *http.Request) string {
		return e.NewContext(r, &discard.ResponseWriter{}).RealIP()
	})
}
