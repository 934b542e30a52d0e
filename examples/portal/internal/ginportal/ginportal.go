// Package ginportal serves the example portal on Gin.
package ginportal

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/autocomplete/ginsearch"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
	"github.com/ratescope/ratescope/ginlimit"
)

// New returns the portal's routes on Gin, in release mode.
func New(a *portal.App) (http.Handler, error) {
	cfg := ginlimit.Config{
		Limiter: a.Limiter,
		Scope:   portal.ScopeAPI,
		User:    func(c *gin.Context) string { return c.GetString(portal.UserKey) },
		Exempt:  func(_ *gin.Context, caller core.Caller) bool { return a.Exempt(caller) },
	}
	// One middleware for the /api group: each request is counted once,
	// at its route's cost.
	groupCfg := cfg
	groupCfg.RouteCosts = a.APICosts()
	// The users of -plan-users get their plan's rates in scope "api".
	groupCfg.Plan = func(c *gin.Context) string { return a.Plan(c.GetString(portal.UserKey)) }
	limitAPI, err := ginlimit.New(groupCfg)
	if err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// A known path asked with another method is 405, as on Echo.
	r.HandleMethodNotAllowed = true
	// Gin's own client address trusts the networks of -trusted-proxies,
	// or none. With -num-proxies alone it differs from ratescope's
	// (ginlimit.CheckClientIP would warn, W612); nothing in the portal
	// reads it: every address shown or counted is the limiter's.
	if err := r.SetTrustedProxies(portal.ProxyList(a.TrustedProxies)); err != nil {
		return nil, err
	}
	r.Use(gin.Recovery(), signIn)
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	r.GET("/api/whoami", func(c *gin.Context) {
		c.JSON(http.StatusOK, a.Whoami(c.Request, c.GetString(portal.UserKey)))
	})
	if a.Metrics != nil {
		r.GET("/metrics", gin.WrapH(a.Metrics))
	}
	if a.Admin() {
		r.DELETE(portal.AdminLimitsRoute+":scope", func(c *gin.Context) {
			a.ResetLimits(c.Writer, c.Request, c.Param("scope"))
		})
		r.Match([]string{http.MethodGet, http.MethodPost}, portal.LiveViewRoute, gin.WrapF(a.LiveView))
	}
	api := r.Group("/api", limitAPI)
	api.GET("/records", func(c *gin.Context) { c.JSON(http.StatusOK, portal.Records()) })
	api.GET("/export", func(c *gin.Context) { c.JSON(http.StatusOK, portal.Records()) })
	for _, name := range portal.SearchBoxes() {
		guard, err := ginsearch.New(name, cfg)
		if err != nil {
			return nil, err
		}
		r.GET("/autocomplete/"+name, guard, func(c *gin.Context) {
			c.JSON(http.StatusOK, a.Search(name, c.Query("q")))
		})
	}
	// The sign-in form: scope "login", counted by address only (no User
	// function), outside the /api group so that scope "api" does not
	// count it too; the units of an answer below 400 are given back.
	limitLogin, err := ginlimit.New(ginlimit.Config{Limiter: a.Limiter, Scope: portal.ScopeLogin, GiveBack: func(c *gin.Context) bool { return c.Writer.Status() < 400 }})
	if err != nil {
		return nil, err
	}
	r.POST(portal.LoginRoute, limitLogin, func(c *gin.Context) {
		status, body := portal.Login(c.Request.Body)
		c.JSON(status, body)
	})
	r.GET("/debug/searches", func(c *gin.Context) { c.JSON(http.StatusOK, a.Searches()) })
	r.POST("/rpc", func(c *gin.Context) {
		if d, ok := a.ChargeRPC(c.Writer, c.Request, c.GetString(portal.UserKey)); ok {
			c.JSON(http.StatusOK, portal.RPCReply(d.Load))
		}
	})
	r.GET("/ws", func(c *gin.Context) { a.ServeWS(c.Writer, c.Request, c.GetString(portal.UserKey)) })
	return r, nil
}

// signIn stands for a session or token middleware: it leaves the user that
// the Authorization header signs in under portal.UserKey.
func signIn(c *gin.Context) {
	if user := portal.UserFromAuthorization(c.GetHeader("Authorization")); user != "" {
		c.Set(portal.UserKey, user)
	}
}
