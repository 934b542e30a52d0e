package liveview_test

import (
	"crypto/subtle"
	"log"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
	"github.com/ratescope/ratescope/liveview"
)

// The live view on Gin, at /debug/limits for GET and POST, behind the
// application's own check of an administrator (here a token in a header).
func Example_gin() {
	view, err := liveview.New(liveview.Config{})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}),
		NumProxies: core.Proxies(1),
		Observe:    view.Observe,
	})
	if err != nil {
		log.Fatal(err)
	}
	view.AllowReset(lim)
	admin := func(c *gin.Context) {
		if subtle.ConstantTimeCompare([]byte(c.GetHeader("X-Admin-Token")), []byte("s3cret")) != 1 {
			c.AbortWithStatus(http.StatusForbidden)
		}
	}
	r := gin.Default()
	r.Match([]string{http.MethodGet, http.MethodPost}, "/debug/limits", admin, gin.WrapH(view))
	r.GET("/api/records", ginlimit.Must(ginlimit.New(ginlimit.Config{Limiter: lim})), func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"records": []string{}}) })
	log.Fatal(r.Run("127.0.0.1:8080"))
}
