package main_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

// TestPage checks that the portal serves its search page at / on every
// framework, not limited, with a box for each search box. browsertest/
// drives the page in a real browser.
func TestPage(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=1/min,100/day")
			for range 2 {
				resp, body := p.get(t, "/", "")
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
				assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
				assert.Empty(t, resp.Header.Get("Ratelimit"), "the page is not limited")
				assert.Equal(t, len(portal.SearchBoxes()), strings.Count(string(body), `class="box"`))
				for _, name := range portal.SearchBoxes() {
					assert.Contains(t, string(body), `<input id="search-`+name+`"`)
				}
			}
			// The framework still serves the rest.
			resp, body := p.get(t, "/api/records", "")
			assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		})
	}
}
