package benchmarks_test

import (
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"

	"github.com/ratescope/ratescope/echolimit"
	"github.com/ratescope/ratescope/ginlimit"
)

var ratescopeContender = contender{
	name: "ratescope",
	gin: func(tb testing.TB, n int) []gin.HandlerFunc {
		h, err := ginlimit.New(ginlimit.Config{Limiter: newRatescope(tb, n), Scope: "api"})
		if err != nil {
			tb.Fatal(err)
		}
		return []gin.HandlerFunc{h}
	},
	echo: func(tb testing.TB, n int) []echo.MiddlewareFunc {
		m, err := echolimit.New(echolimit.Config{Limiter: newRatescope(tb, n), Scope: "api"})
		if err != nil {
			tb.Fatal(err)
		}
		return []echo.MiddlewareFunc{m}
	},
}
