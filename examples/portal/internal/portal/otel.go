package portal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	rsotel "github.com/ratescope/ratescope/otel"
)

// The values of -metrics (Options.Metrics).
const (
	// MetricsPrometheus serves GET /metrics in the Prometheus text format,
	// written by [Metrics]; -metrics alone means it.
	MetricsPrometheus = "prometheus"
	// MetricsOTel records the decisions with the otel module's Recorder
	// into an OpenTelemetry SDK MeterProvider, and serves at GET /metrics
	// what its ManualReader collects, as JSON.
	MetricsOTel = "otel"
)

// metricsFlag is the -metrics flag: prometheus or otel. It is a boolean
// flag too, so that -metrics alone, as it was before it took a value,
// means prometheus; [metricsArg] lets "-metrics otel" be written with a
// space.
type metricsFlag struct{ v *string }

func (f metricsFlag) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}

func (f metricsFlag) Set(s string) error {
	switch s {
	case "true", MetricsPrometheus:
		*f.v = MetricsPrometheus
	case MetricsOTel:
		*f.v = MetricsOTel
	case "false":
		*f.v = ""
	default:
		return fmt.Errorf("want %s or %s", MetricsPrometheus, MetricsOTel)
	}
	return nil
}

// IsBoolFlag lets -metrics stand alone.
func (metricsFlag) IsBoolFlag() bool { return true }

// metricsArg returns args with "-metrics VALUE" written "-metrics=VALUE"
// when VALUE is prometheus or otel: the flag package gives a boolean flag
// no separate value. It stops at "--", where the flags end.
func metricsArg(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "-metrics" || a == "--metrics") && i+1 < len(args) &&
			(args[i+1] == MetricsPrometheus || args[i+1] == MetricsOTel) {
			a += "=" + args[i+1]
			i++
		}
		out = append(out, a)
	}
	return out
}

// otelMetrics is -metrics otel: the decisions recorded through the otel
// module into an SDK MeterProvider whose ManualReader GET /metrics
// collects. Its methods are safe for concurrent use.
type otelMetrics struct {
	recorder *rsotel.Recorder
	reader   *sdkmetric.ManualReader
	provider *sdkmetric.MeterProvider
}

func newOTelMetrics() (*otelMetrics, error) {
	m := &otelMetrics{reader: sdkmetric.NewManualReader()}
	m.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(m.reader))
	r, err := rsotel.New(rsotel.Config{MeterProvider: m.provider})
	if err != nil {
		_ = m.provider.Shutdown(context.Background())
		return nil, err
	}
	m.recorder = r
	return m, nil
}

// ServeHTTP answers GET /metrics with what the reader collects now, the
// SDK's metricdata.ResourceMetrics as JSON (as its stdoutmetric exporter
// writes it).
func (m *otelMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(r.Context(), &rm); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rm)
}

// Close shuts the MeterProvider down.
func (m *otelMetrics) Close() error {
	return m.provider.Shutdown(context.Background())
}
