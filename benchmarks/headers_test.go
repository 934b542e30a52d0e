package benchmarks_test

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ratescope/ratescope/benchmarks"
)

// TestHeaderWriters checks the classes benchtable compares like for like:
// a served response of each peer of benchmarks.HeaderWriters (and of
// ratescope with its fields on every response) carries a rate-limit
// header, one of benchmarks.Headerless (and of ratescope with its fields on
// refusals only, or none) carries none, one window or two.
func TestHeaderWriters(t *testing.T) {
	t.Parallel()
	writes := append([]string{"ratescope"}, benchmarks.HeaderWriters...)
	silent := append([]string{"ratescope-refused", "ratescope-none"}, benchmarks.Headerless...)
	for _, fw := range frameworks {
		for _, c := range contenders {
			name := strings.TrimSuffix(c.name, "-1w")
			want := slices.Contains(writes, name)
			if !want && !slices.Contains(silent, name) {
				continue
			}
			t.Run(fw.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				h := fw.mount(t, c, 10)
				if h == nil {
					t.Skip("not offered for " + fw.name)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, request("192.0.2.1:1234"))
				if w.Code != 200 {
					t.Fatalf("status %d, want 200", w.Code)
				}
				var fields []string
				for k := range w.Header() {
					if l := strings.ToLower(k); strings.Contains(l, "ratelimit") || strings.Contains(l, "rate-limit") {
						fields = append(fields, k)
					}
				}
				if got := len(fields) > 0; got != want {
					t.Errorf("rate-limit fields on a served response: %v; want some: %v", fields, want)
				}
			})
		}
	}
}
