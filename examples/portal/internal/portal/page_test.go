package portal_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

func TestPage(t *testing.T) {
	t.Parallel()
	page, err := portal.NewPage()
	require.NoError(t, err)

	tests := []struct {
		name   string
		method string
		status int
		body   bool
	}{
		{name: "get", method: http.MethodGet, status: http.StatusOK, body: true},
		{name: "head", method: http.MethodHead, status: http.StatusOK},
		{name: "post", method: http.MethodPost, status: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			page.ServeHTTP(w, httptest.NewRequest(tt.method, portal.PagePath, nil))
			assert.Equal(t, tt.status, w.Code)
			if tt.status != http.StatusOK {
				assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
				return
			}
			assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
			assert.NotEmpty(t, w.Header().Get("Content-Length"))
			if !tt.body {
				assert.Zero(t, w.Body.Len())
			}
		})
	}
}

// The page has one box for each search box, and its script inline: it
// loads nothing, from the portal or elsewhere.
func TestPageContent(t *testing.T) {
	t.Parallel()
	page, err := portal.NewPage()
	require.NoError(t, err)
	w := httptest.NewRecorder()
	page.ServeHTTP(w, httptest.NewRequest(http.MethodGet, portal.PagePath, nil))
	require.Equal(t, http.StatusOK, w.Code)
	body, err := io.ReadAll(w.Body)
	require.NoError(t, err)
	html := string(body)

	assert.Equal(t, len(portal.SearchBoxes()), strings.Count(html, `class="box"`))
	for _, name := range portal.SearchBoxes() {
		assert.Contains(t, html, `data-box="`+name+`"`)
		assert.Contains(t, html, `<input id="search-`+name+`"`)
	}
	assert.Contains(t, html, `<label for="search-ror">ROR</label>`)
	assert.Contains(t, html, `fetch(url`, "the script, inline")
	assert.Contains(t, html, `resp.headers.get("Retry-After")`)
	for _, external := range []string{` src=`, `href="http`, `href="/`, `@import`, `url(`} {
		assert.NotContains(t, html, external)
	}
	// The script is inserted as it is, not escaped as a JS string.
	assert.NotContains(t, html, `<script>"`)
}

// WithPage serves the page at / and passes every other path on.
func TestWithPage(t *testing.T) {
	t.Parallel()
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	h, err := portal.WithPage(next)
	require.NoError(t, err)

	tests := []struct {
		name   string
		method string
		path   string
		status int
	}{
		{name: "page", method: http.MethodGet, path: "/", status: http.StatusOK},
		{name: "page with a query", method: http.MethodGet, path: "/?q=x", status: http.StatusOK},
		{name: "post to the page", method: http.MethodPost, path: "/", status: http.StatusMethodNotAllowed},
		{name: "api", method: http.MethodGet, path: "/api/records", status: http.StatusTeapot},
		{name: "search", method: http.MethodGet, path: "/autocomplete/project?q=x", status: http.StatusTeapot},
		{name: "unknown", method: http.MethodGet, path: "/index.html", status: http.StatusTeapot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			assert.Equal(t, tt.status, w.Code)
		})
	}
}
