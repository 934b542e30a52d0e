package prometheus_test

import (
	"log"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
	rsprom "github.com/ratescope/ratescope/prometheus"
)

// The metrics quick start of the README: every decision of the limiter
// counted by scope, kind of caller and outcome, and served at GET /metrics
// in the Prometheus text format.
func ExampleNew() {
	metrics, err := rsprom.New(rsprom.Config{})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}), // one process; redisstore for several
		Rates:      map[string]string{"api.anon": "60/min,1000/day", "api.user": "600/min,20000/day"},
		NumProxies: new(1),          // one reverse proxy in front of the app
		Observe:    metrics.Observe, // every decision
	})
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	if err != nil {
		log.Fatal(err)
	}
	r := gin.Default()
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	r.GET("/api/records", limit, func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"records": []string{}}) })
	log.Fatal(r.Run("127.0.0.1:8080"))
}
