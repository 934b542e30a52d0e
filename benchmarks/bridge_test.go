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

// ginWriter is the ResponseWriter the Gin bridge passes to the middleware.
type ginWriter struct {
	gin.ResponseWriter
	c      *gin.Context
	passed bool
}

var ginWriters = sync.Pool{New: func() any { return new(ginWriter) }}

func ginBridge(m stdMiddleware) gin.HandlerFunc {
	h := m(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw := w.(*ginWriter)
		gw.passed = true
		gw.c.Request = r
	}))
	return func(c *gin.Context) {
		gw := ginWriters.Get().(*ginWriter)
		gw.ResponseWriter, gw.c, gw.passed = c.Writer, c, false
		h.ServeHTTP(gw, c.Request)
		passed := gw.passed
		*gw = ginWriter{}
		ginWriters.Put(gw)
		if !passed {
			c.Abort()
		}
	}
}

// echoWriter is the ResponseWriter the Echo bridge passes to the
// middleware.
type echoWriter struct {
	http.ResponseWriter
	c      echo.Context
	passed bool
}

var echoWriters = sync.Pool{New: func() any { return new(echoWriter) }}

func echoBridge(m stdMiddleware) echo.MiddlewareFunc {
	h := m(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ew := w.(*echoWriter)
		ew.passed = true
		ew.c.SetRequest(r)
	}))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ew := echoWriters.Get().(*echoWriter)
			ew.ResponseWriter, ew.c, ew.passed = c.Response(), c, false
			h.ServeHTTP(ew, c.Request())
			passed := ew.passed
			*ew = echoWriter{}
			echoWriters.Put(ew)
			if !passed {
				return nil
			}
			return next(c)
		}
	}
}

// echo5Writer is the ResponseWriter the Echo v5 bridge passes to the
// middleware.
type echo5Writer struct {
	http.ResponseWriter
	c      *echo5.Context
	passed bool
}

var echo5Writers = sync.Pool{New: func() any { return new(echo5Writer) }}

func echo5Bridge(m stdMiddleware) echo5.MiddlewareFunc {
	h := m(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ew := w.(*echo5Writer)
		ew.passed = true
		ew.c.SetRequest(r)
	}))
	return func(next echo5.HandlerFunc) echo5.HandlerFunc {
		return func(c *echo5.Context) error {
			ew := echo5Writers.Get().(*echo5Writer)
			ew.ResponseWriter, ew.c, ew.passed = c.Response(), c, false
			h.ServeHTTP(ew, c.Request())
			passed := ew.passed
			*ew = echo5Writer{}
			echo5Writers.Put(ew)
			if !passed {
				return nil
			}
			return next(c)
		}
	}
}
