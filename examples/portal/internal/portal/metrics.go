package portal

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/ratescope/ratescope/core"
)

// Metrics counts the limiter's decisions and writes them in the Prometheus
// text format, for GET /metrics with -metrics prometheus. It is written
// without the Prometheus client, which the portal needed none of when it
// was in ratescope's root module (ADR 0017); an application uses the
// Collector of github.com/ratescope/ratescope/prometheus instead. Its
// methods are safe for concurrent use.
type Metrics struct {
	// counts has a counter for every scope, kind and outcome, made at
	// the start so that every series is there from the first scrape.
	counts  map[metricKey]*atomic.Int64
	keys    []metricKey // sorted
	limiter *core.Limiter
}

type metricKey struct {
	scope   string
	kind    core.Kind
	outcome core.Outcome
}

func newMetrics(scopes []string) *Metrics {
	m := &Metrics{counts: map[metricKey]*atomic.Int64{}}
	for _, s := range scopes {
		for _, k := range []core.Kind{core.Anonymous, core.User} {
			for _, o := range core.Outcomes() {
				key := metricKey{scope: s, kind: k, outcome: o}
				m.counts[key] = new(atomic.Int64)
				m.keys = append(m.keys, key)
			}
		}
	}
	slices.SortFunc(m.keys, func(a, b metricKey) int {
		return strings.Compare(a.labels(), b.labels())
	})
	return m
}

func (k metricKey) labels() string {
	return fmt.Sprintf(`scope=%q,kind=%q,outcome=%q`, k.scope, k.kind, k.outcome)
}

// Observe counts the decision of e: the limiter's Config.Observe.
func (m *Metrics) Observe(_ context.Context, e core.Event) {
	if c := m.counts[metricKey{scope: e.Scope, kind: e.Caller.Kind(), outcome: e.Outcome}]; c != nil {
		c.Add(1)
	}
}

// ServeHTTP answers GET /metrics in the Prometheus text format 0.0.4.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = m.write(w)
}

func (m *Metrics) write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# HELP ratescope_decisions_total Rate limit decisions, by scope, kind of caller and outcome.\n")
	b.WriteString("# TYPE ratescope_decisions_total counter\n")
	for _, k := range m.keys {
		fmt.Fprintf(&b, "ratescope_decisions_total{%s} %d\n", k.labels(), m.counts[k].Load())
	}
	b.WriteString("# HELP ratescope_store_failures_total Decisions that failed open, or failed closed, because the store returned an error.\n")
	b.WriteString("# TYPE ratescope_store_failures_total counter\n")
	var failures int64
	if m.limiter != nil {
		failures = m.limiter.StoreFailures()
	}
	fmt.Fprintf(&b, "ratescope_store_failures_total %d\n", failures)
	_, err := io.WriteString(w, b.String())
	return err
}
