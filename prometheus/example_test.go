package prometheus_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	rsprom "github.com/ratescope/ratescope/prometheus"
)

func Example() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	metrics, err := rsprom.New(rsprom.Config{})
	if err != nil {
		panic(err)
	}
	lim, err := core.New(core.Config{
		Store:      store,
		NumProxies: new(1),
		Observe:    metrics.Observe, // every decision
	})
	if err != nil {
		panic(err)
	}
	_ = metrics.Watch(lim)   // ratescope_store_failures_total
	_ = metrics.Watch(store) // ratescope_store_evictions_total
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	_, _ = lim.Allow(context.Background(), "api", core.UserCaller("alice"))

	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "ratescope_decisions_total" {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					fmt.Printf("%s=%s ", l.GetName(), l.GetValue())
				}
				fmt.Println(m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// kind=user outcome=allowed scope=api 1
}
