// Package discard has an http.ResponseWriter that keeps nothing, for the
// adapters' startup checks, which build a framework context to read the
// framework's client address and never write a response: so that no
// library package links net/http/httptest, a package meant for tests.
package discard

import "net/http"

// ResponseWriter is an http.ResponseWriter that discards what is written
// to it. Its zero value is ready to use; it is not safe for concurrent
// use.
type ResponseWriter struct {
	header http.Header
}

// Header returns a header map of its own, which nothing reads.
func (w *ResponseWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

// Write discards b.
func (*ResponseWriter) Write(b []byte) (int, error) { return len(b), nil }

// WriteHeader discards the status code.
func (*ResponseWriter) WriteHeader(int) {}
