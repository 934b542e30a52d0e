package ginlimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/ginlimit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

func TestBalanceSuite(t *testing.T) {
	adaptertest.RunBalance(t, func(t *testing.T, o adaptertest.BalanceOptions) http.Handler {
		cfg := ginlimit.BalanceConfig{Limiter: o.Limiter, Scope: o.Scope, User: func(c *gin.Context) string { return c.GetHeader(adaptertest.UserHeader) }}
		if o.Key != nil {
			cfg.Key = func(c *gin.Context) string { return o.Key(c.Request) }
		}
		if o.Skip != nil {
			cfg.Skipper = func(c *gin.Context) bool { return o.Skip(c.Request) }
		}
		if o.Cost != nil {
			cfg.Cost = func(c *gin.Context) int64 { return o.Cost(c.Request) }
		}
		if o.Exempt != nil {
			cfg.Exempt = func(_ *gin.Context, caller core.Caller) bool { return o.Exempt(caller) }
		}
		limit, err := ginlimit.NewBalance(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := gin.New()
		r.POST(adaptertest.Path, limit, func(c *gin.Context) {
			d, ok := ginlimit.BalanceDecision(c)
			o.Handler(c.Writer, d, ok)
		})
		return r
	})
}

func TestDenyOverloaded(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	ginlimit.DenyOverloaded(c, &core.Decision{})
	assert.True(t, c.IsAborted())
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "Server is overloaded", w.Body.String())
	_, err := ginlimit.NewBalance(ginlimit.BalanceConfig{})
	assert.ErrorContains(t, err, "no Limiter")
}
