package liveview_test

import (
	"log"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/ginlimit"
)

// Gin writes its debug lines to the standard output, which the examples'
// output is checked against.
func init() { gin.SetMode(gin.TestMode) }

// The live view of [Example] on Gin, at /debug/limits for GET and POST,
// behind the application's own check of an administrator.
func Example_gin() {
	view, lim := newView()
	admin := func(c *gin.Context) {
		if !isAdmin(c.Request) {
			c.AbortWithStatus(http.StatusForbidden)
		}
	}
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	if err != nil {
		log.Fatal(err)
	}
	r := gin.New()
	r.Match([]string{http.MethodGet, http.MethodPost}, "/debug/limits", admin, gin.WrapH(view))
	r.GET("/api/records", limit, func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"records": []string{}}) })
	tryIt(r) // or: log.Fatal(r.Run("127.0.0.1:8080"))
	// Output:
	// GET, a stranger: 403
	// GET, an administrator: 200
	// POST, an administrator without the page's CSRF token: 403 {"error":"missing or wrong X-CSRF-Token"}
}
