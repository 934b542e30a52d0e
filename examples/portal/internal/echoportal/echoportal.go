// Package echoportal serves the example portal on Echo.
package echoportal

import (
	"net"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/ratescope/ratescope/autocomplete/echosearch"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/echolimit"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

// New returns the portal's routes on Echo.
func New(a *portal.App) (http.Handler, error) {
	cfg := echolimit.Config{
		Limiter: a.Limiter,
		Scope:   portal.ScopeAPI,
		User:    user,
		Exempt:  func(_ echo.Context, caller core.Caller) bool { return a.Exempt(caller) },
	}
	// One middleware for the /api group: each request is counted once,
	// at its route's cost.
	groupCfg := cfg
	groupCfg.RouteCosts = a.APICosts()
	// The users of -plan-users get their plan's rates in scope "api".
	groupCfg.Plan = func(c echo.Context) string { return a.Plan(user(c)) }
	limitAPI, err := echolimit.New(groupCfg)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = ipExtractor(a.TrustedProxies)
	e.Use(middleware.Recover(), signIn)
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/api/whoami", func(c echo.Context) error {
		return c.JSON(http.StatusOK, a.Whoami(c.Request(), user(c)))
	})
	if a.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(a.Metrics))
	}
	if a.Admin() {
		e.DELETE(portal.AdminLimitsRoute+":scope", func(c echo.Context) error {
			a.ResetLimits(c.Response(), c.Request(), c.Param("scope"))
			return nil
		})
		e.Match([]string{http.MethodGet, http.MethodPost}, portal.LiveViewRoute, echo.WrapHandler(http.HandlerFunc(a.LiveView)))
	}
	// The middleware is the routes' own, not the group's: a group's
	// middleware makes Echo route every unknown path under /api to a 404
	// that the middleware counts, where Gin neither routes nor counts it.
	api := e.Group("/api")
	api.GET("/records", func(c echo.Context) error { return c.JSON(http.StatusOK, portal.Records()) }, limitAPI)
	api.GET("/export", func(c echo.Context) error { return c.JSON(http.StatusOK, portal.Records()) }, limitAPI)
	for _, name := range portal.SearchBoxes() {
		guard, err := echosearch.New(name, cfg)
		if err != nil {
			return nil, err
		}
		e.GET("/autocomplete/"+name, func(c echo.Context) error {
			return c.JSON(http.StatusOK, a.Search(name, c.QueryParam("q")))
		}, guard)
	}
	// The sign-in form: scope "login", counted by address only (no User
	// function), outside the /api group so that scope "api" does not
	// count it too; the units of an answer below 400 are given back.
	limitLogin, err := echolimit.New(echolimit.Config{Limiter: a.Limiter, Scope: portal.ScopeLogin, GiveBack: func(c echo.Context) bool { return c.Response().Status < 400 }})
	if err != nil {
		return nil, err
	}
	e.POST(portal.LoginRoute, func(c echo.Context) error {
		status, body := portal.Login(c.Request().Body)
		return c.JSON(status, body)
	}, limitLogin)
	e.GET("/debug/searches", func(c echo.Context) error { return c.JSON(http.StatusOK, a.Searches()) })
	e.POST("/rpc", func(c echo.Context) error {
		if d, ok := a.ChargeRPC(c.Response(), c.Request(), user(c)); ok {
			return c.JSON(http.StatusOK, portal.RPCReply(d.Load))
		}
		return nil
	})
	e.GET("/ws", func(c echo.Context) error {
		a.ServeWS(c.Response(), c.Request(), user(c))
		return nil
	})
	return e, nil
}

// signIn stands for a session or token middleware: it leaves the user that
// the Authorization header signs in under portal.UserKey.
func signIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := portal.UserFromAuthorization(c.Request().Header.Get("Authorization")); u != "" {
			c.Set(portal.UserKey, u)
		}
		return next(c)
	}
}

// user returns the signed-in user, "" for an anonymous caller.
func user(c echo.Context) string {
	u, _ := c.Get(portal.UserKey).(string)
	return u
}

// ipExtractor makes Echo's own client address trust the networks given,
// or none. With -num-proxies alone it differs from ratescope's
// (echolimit.CheckClientIP would warn, W612); nothing in the portal reads
// it: every address shown or counted is the limiter's.
func ipExtractor(trusted core.Networks) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
