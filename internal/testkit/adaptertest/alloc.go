package adaptertest

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// PerRequest returns what h allocates to serve one GET [Path] from
// 192.0.2.1 into a reused recorder: allocations (testing.AllocsPerRun)
// and bytes (runtime.MemStats.TotalAlloc over 1000 requests, averaged).
// Call it from a test that does not run in parallel, without the race
// detector, and compare a handler with the middleware to one with a
// middleware that does nothing: the framework's own cost cancels out.
func PerRequest(h http.Handler) (allocs, bytes float64) {
	req := httptest.NewRequest(http.MethodGet, Path, nil)
	req.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	serve := func() {
		clear(w.Header())
		h.ServeHTTP(w, req)
	}
	allocs = testing.AllocsPerRun(200, serve)
	const n = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		serve()
	}
	runtime.ReadMemStats(&after)
	return allocs, float64(after.TotalAlloc-before.TotalAlloc) / n
}
