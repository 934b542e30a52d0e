package otel_test

import (
	"log"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
	rsotel "github.com/ratescope/ratescope/otel"
)

// The OpenTelemetry quick start of the README: every decision of the
// limiter recorded by scope, kind of caller and outcome, and exported by
// the application's MeterProvider, here to standard output once a minute
// (OTEL_METRIC_EXPORT_INTERVAL changes it); an OTLP exporter in its place
// sends them to a collector.
func ExampleNew() {
	exporter, err := stdoutmetric.New() // or otlpmetrichttp.New(ctx), for a collector
	if err != nil {
		log.Fatal(err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exporter)))
	metrics, err := rsotel.New(rsotel.Config{MeterProvider: provider})
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
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	if err != nil {
		log.Fatal(err)
	}
	r := gin.Default()
	r.GET("/api/records", limit, func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"records": []string{}}) })
	log.Fatal(r.Run("127.0.0.1:8080"))
}
