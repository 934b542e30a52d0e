// Package ginsearch guards the search boxes of a Gin application: each
// search endpoint is counted in its own scope, and a caller over a limit is
// answered 429 with Retry-After and an empty list of results before the
// search handler runs.
//
//	guard, err := ginsearch.New("project", ginlimit.Config{Limiter: lim, User: currentUser})
//	...
//	r.GET("/autocomplete/project", guard, searchProjects)
//
// The limiter must know the search boxes' scopes: add autocomplete.Scopes()
// to core.Config.Scopes. See package autocomplete for the model.
package ginsearch

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/autocomplete/internal/box"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/ginlimit"
)

// New returns a middleware that guards the search box called name. It is
// [ginlimit.New] with cfg.Scope set to the search box's scope,
// "autocomplete." and the name, and, unless cfg has one, a deny handler
// that answers 429 with {"results": []} ([DenyWith] of an empty
// [autocomplete.Response]). Put it in front of the search handler: a
// refused request never reaches it, so nothing is searched.
//
// It returns an error if the limiter does not know the scope, or cfg is
// otherwise invalid.
func New(name string, cfg ginlimit.Config) (gin.HandlerFunc, error) {
	cfg.Scope = box.Scope(name)
	if cfg.DenyHandler == nil {
		cfg.DenyHandler = DenyWith(autocomplete.Response{Results: []autocomplete.Result{}})
	}
	if err := box.Check(cfg.Limiter, name); err != nil {
		return nil, fmt.Errorf("ginsearch: %w", err)
	}
	return ginlimit.New(cfg)
}

// DenyWith returns a deny handler that aborts with 429 Too Many Requests
// (503 Service Unavailable when the store failed in a scope that fails
// closed: [core.Decision.Status]) and body as JSON: the shape the search endpoint returns when it finds nothing,
// so a search box shows no suggestions rather than an error. The
// Retry-After and RateLimit headers are already set.
func DenyWith(body any) func(*gin.Context, *core.Decision) {
	return func(c *gin.Context, d *core.Decision) {
		c.AbortWithStatusJSON(d.Status(), body)
	}
}
