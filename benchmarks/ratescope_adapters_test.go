package benchmarks_test

import (
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	echo5 "github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echo5limit"
	"github.com/ratescope/ratescope/echolimit"
	"github.com/ratescope/ratescope/ginlimit"
)

// ratescopeContenders are ratescope under each header policy
// (core.Config.Headers): "ratescope" writes the fields on every response,
// as the peers that write headers do; "ratescope-refused" on refusals
// only and "ratescope-none" not at all (Retry-After on a 429 stays), as
// the peers that write none (x/time/rate in a map, Echo's RateLimiter).
var ratescopeContenders = []contender{
	ratescopeContender("ratescope", core.HeadersAll),
	ratescopeContender("ratescope-refused", core.HeadersRefused),
	ratescopeContender("ratescope-none", core.HeadersNone),
}

func ratescopeContender(name string, mode core.HeaderMode) contender {
	return contender{
		name: name,
		gin: func(tb testing.TB, n int) []gin.HandlerFunc {
			h, err := ginlimit.New(ginlimit.Config{Limiter: newRatescopeHeaders(tb, n, mode), Scope: "api"})
			if err != nil {
				tb.Fatal(err)
			}
			return []gin.HandlerFunc{h}
		},
		echo: func(tb testing.TB, n int) []echo.MiddlewareFunc {
			m, err := echolimit.New(echolimit.Config{Limiter: newRatescopeHeaders(tb, n, mode), Scope: "api"})
			if err != nil {
				tb.Fatal(err)
			}
			return []echo.MiddlewareFunc{m}
		},
		echo5: func(tb testing.TB, n int) []echo5.MiddlewareFunc {
			m, err := echo5limit.New(echo5limit.Config{Limiter: newRatescopeHeaders(tb, n, mode), Scope: "api"})
			if err != nil {
				tb.Fatal(err)
			}
			return []echo5.MiddlewareFunc{m}
		},
	}
}

// newRatescopeHeaders is newRatescope with the given header policy.
func newRatescopeHeaders(tb testing.TB, n int, mode core.HeaderMode) *core.Limiter {
	st := memstore.New(memstore.Config{})
	tb.Cleanup(func() { st.Close() })
	cfg := ratescopeConfig(st, core.PerMinute(int64(n)), core.PerDay(int64(n)))
	cfg.Headers = mode
	return newRatescopeFrom(tb, cfg)
}
