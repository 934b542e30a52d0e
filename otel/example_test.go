package otel_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	rsotel "github.com/ratescope/ratescope/otel"
)

func Example() {
	// The application's MeterProvider; here with a ManualReader, which
	// collects when asked.
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	store := memstore.New(memstore.Config{})
	defer store.Close()
	metrics, err := rsotel.New(rsotel.Config{MeterProvider: provider})
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
	_ = metrics.Watch(lim)   // ratescope.store.failures
	_ = metrics.Watch(store) // ratescope.store.evictions

	_, _ = lim.Allow(context.Background(), "api", core.UserCaller("alice"))

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range data.DataPoints {
				fmt.Println(m.Name, m.Unit, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
			}
		case metricdata.Histogram[float64]:
			for _, p := range data.DataPoints {
				fmt.Println(m.Name, m.Unit, p.Attributes.Encoded(attribute.DefaultEncoder()), "count", p.Count)
			}
		}
	}
	// Output:
	// ratescope.decisions {decision} kind=user,outcome=allowed,scope=api 1
	// ratescope.decision.cost {unit} kind=user,outcome=allowed,scope=api 1
	// ratescope.decision.duration s outcome=allowed,scope=api count 1
	// ratescope.store.failures {decision}  0
	// ratescope.store.evictions {entry}  0
}
