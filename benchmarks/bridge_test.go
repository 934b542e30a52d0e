package benchmarks_test

import (
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	echo5 "github.com/labstack/echo/v5"
)

// The bridges mount net/http middleware on Gin and Echo without an
// allocation per request: the middleware is wrapped around a fixed inner
// handler once, and each request passes a pooled ResponseWriter that
// carries the framework's context, so the inner handler can tell the
// framework to go on. (echo.WrapMiddleware and the usual Gin wrapper build
// closures and handlers on every request; that would be charged to the
// peers.) A limiter that denies writes its answer through the bridge
// writer, which writes to the framework's own writer.

// bridgeWriter is the ResponseWriter a bridge passes to the middleware:
// the framework's writer, and its context C for the inner handler.
type bridgeWriter[C any] struct {
	http.ResponseWriter
	c      C
	passed bool
}

// bridge wraps m around the inner handler, which hands the request on to
// the framework's context with setRequest, and returns serve: it runs m
// for one request r of context c, writing to w, and reports whether m
// passed the request on.
func bridge[C any](m stdMiddleware, setRequest func(C, *http.Request)) (serve func(w http.ResponseWriter, c C, r *http.Request) bool) {
	writers := &sync.Pool{New: func() any { return new(bridgeWriter[C]) }}
	h := m(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := w.(*bridgeWriter[C])
		bw.passed = true
		setRequest(bw.c, r)
	}))
	return func(w http.ResponseWriter, c C, r *http.Request) bool {
		bw := writers.Get().(*bridgeWriter[C])
		bw.ResponseWriter, bw.c, bw.passed = w, c, false
		h.ServeHTTP(bw, r)
		passed := bw.passed
		*bw = bridgeWriter[C]{}
		writers.Put(bw)
		return passed
	}
}

func ginBridge(m stdMiddleware) gin.HandlerFunc {
	serve := bridge(m, func(c *gin.Context, r *http.Request) { c.Request = r })
	return func(c *gin.Context) {
		if !serve(c.Writer, c, c.Request) {
			c.Abort()
		}
	}
}

func echoBridge(m stdMiddleware) echo.MiddlewareFunc {
	serve := bridge(m, echo.Context.SetRequest)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !serve(c.Response(), c, c.Request()) {
				return nil
			}
			return next(c)
		}
	}
}

func echo5Bridge(m stdMiddleware) echo5.MiddlewareFunc {
	serve := bridge(m, (*echo5.Context).SetRequest)
	return func(next echo5.HandlerFunc) echo5.HandlerFunc {
		return func(c *echo5.Context) error {
			if !serve(c.Response(), c, c.Request()) {
				return nil
			}
			return next(c)
		}
	}
}
