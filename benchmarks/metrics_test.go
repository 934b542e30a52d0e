package benchmarks_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	prom "github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratescope/ratescope/benchmarks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
	rsotel "github.com/ratescope/ratescope/otel"
	rsprom "github.com/ratescope/ratescope/prometheus"
)

// metricsHooks are the limiter's Config.Observe of BenchmarkMetrics: none,
// the Prometheus collector (registered), and the OpenTelemetry recorder on
// an SDK MeterProvider with a ManualReader, as an application has them.
var metricsHooks = []struct {
	name string
	hook func(tb testing.TB) func(context.Context, core.Event)
}{
	{"none", func(testing.TB) func(context.Context, core.Event) { return nil }},
	{"prometheus", func(tb testing.TB) func(context.Context, core.Event) {
		c, err := rsprom.New(rsprom.Config{})
		if err != nil {
			tb.Fatal(err)
		}
		prom.NewRegistry().MustRegister(c)
		return c.Observe
	}},
	{"otel", func(tb testing.TB) func(context.Context, core.Event) {
		provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		tb.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
		r, err := rsotel.New(rsotel.Config{MeterProvider: provider})
		if err != nil {
			tb.Fatal(err)
		}
		return r.Observe
	}},
}

// BenchmarkMetrics is a request served through Gin and ginlimit (memory
// store, no header written but Retry-After on a refusal, which never
// comes) with each metrics hook: compare the hooks with
// benchstat -col /metrics.
func BenchmarkMetrics(b *testing.B) {
	for _, m := range metricsHooks {
		for _, cc := range callerCases {
			b.Run("metrics="+m.name+"/"+cc.name, func(b *testing.B) {
				st := memstore.New(memstore.Config{})
				b.Cleanup(func() { st.Close() })
				cfg := ratescopeConfig(st, core.PerMinute(benchmarks.Limit), core.PerDay(benchmarks.Limit))
				cfg.Observe = m.hook(b)
				mw, err := ginlimit.New(ginlimit.Config{Limiter: newRatescopeFrom(b, cfg), Scope: "api"})
				if err != nil {
					b.Fatal(err)
				}
				h := newGin(b, []gin.HandlerFunc{mw})
				reqs := make([]*http.Request, cc.n)
				for i := range reqs {
					reqs[i] = request(benchmarks.RemoteAddr(i))
				}
				serve(b, h, reqs)
			})
		}
	}
}
