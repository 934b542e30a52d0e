// Package echo5search guards the search boxes of an Echo v5 application: each
// search endpoint is counted in its own scope, and a caller over a limit is
// answered 429 with Retry-After and an empty list of results before the
// search handler runs.
//
//	guard, err := echo5search.New("project", echo5limit.Config{Limiter: lim, User: currentUser})
//	...
//	e.GET("/autocomplete/project", searchProjects, guard)
//
// The limiter must know the search boxes' scopes: add autocomplete.Scopes()
// to core.Config.Scopes. See package autocomplete for the model.
package echo5search

import (
	"fmt"

	"github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/autocomplete/internal/box"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/echo5limit"
)

// New returns a middleware that guards the search box called name. It is
// [echo5limit.New] with cfg.Scope set to the search box's scope,
// "autocomplete." and the name, and, unless cfg has one, a deny handler
// that answers 429 with {"results": []} ([DenyWith] of an empty
// [autocomplete.Response]). Put it on the search route: a refused request
// never reaches the handler, so nothing is searched.
//
// It returns an error if the limiter does not know the scope, or cfg is
// otherwise invalid.
func New(name string, cfg echo5limit.Config) (echo.MiddlewareFunc, error) {
	cfg.Scope = box.Scope(name)
	if cfg.DenyHandler == nil {
		cfg.DenyHandler = DenyWith(autocomplete.Response{Results: []autocomplete.Result{}})
	}
	if err := box.Check(cfg.Limiter, name); err != nil {
		return nil, fmt.Errorf("echo5search: %w", err)
	}
	return echo5limit.New(cfg)
}

// DenyWith returns a deny handler that answers 429 Too Many Requests (503
// Service Unavailable when the store failed in a scope that fails closed:
// [core.Decision.Status]) with body as JSON: the shape the search endpoint returns when it finds nothing,
// so a search box shows no suggestions rather than an error. It writes the
// response itself, whatever the application's HTTPErrorHandler does with
// errors. The Retry-After and RateLimit headers are already set.
func DenyWith(body any) func(*echo.Context, *core.Decision) error {
	return func(c *echo.Context, d *core.Decision) error {
		return c.JSON(d.Status(), body)
	}
}
