package browsertest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveToken is the -admin-token of the portals of TestLiveView.
const liveToken = "s3cret-live"

// liveRow is the first row of the live view's table of refused callers
// and the refused total of scope api's anonymous callers, read from the
// page in one go.
type liveRow struct {
	Caller   string `json:"caller"`
	Scope    string `json:"scope"`
	Refusals string `json:"refusals"`
	Reset    string `json:"reset"`
	Disabled bool   `json:"disabled"`
	Refused  string `json:"refused"` // data-total of the api anon chart's "denied"
	Drawn    bool   `json:"drawn"`   // the chart has a "denied" line
	Status   string `json:"status"`
}

// readLive reads the live view's first row.
var readLive = chromedp.Evaluate[liveRow](`(() => {
	const row = document.querySelector("#refused tbody tr[data-ref]");
	const chart = document.querySelector('section.chart[data-scope="api"][data-kind="anon"]');
	const total = chart && chart.querySelector('li[data-outcome="denied"]');
	const reset = row && row.querySelector("span.muted");
	const button = row && row.querySelector("button");
	return {
		caller: button ? button.dataset.caller : "",
		scope: row ? row.dataset.scope : "",
		refusals: row ? row.dataset.refusals : "",
		reset: reset ? reset.textContent : "",
		disabled: button ? button.disabled : true,
		refused: total ? total.dataset.total : "",
		drawn: !!(chart && chart.querySelector('polyline[data-outcome="denied"]')),
		status: document.getElementById("status").textContent,
	};
})()`)

// extraHeaders makes the tab send h with every request.
func extraHeaders(h network.Headers) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
		return chromedp.Void{}, err
	}
}

// records asks GET /api/records n times as the anonymous caller behind
// the portal's proxy at address xff and returns the statuses.
func records(t *testing.T, url, xff string, n int) []int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	var statuses []int
	for range n {
		req, err := http.NewRequest(http.MethodGet, url+"/api/records", nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		statuses = append(statuses, resp.StatusCode)
	}
	return statuses
}

// liveViewScreenshot is the screenshot of the how-to "see who is being
// limited", relative to this module.
const liveViewScreenshot = "../docs/howto/live-view.png"

// The live view of the portal (/debug/limits, -admin-token): a caller
// driven over its limit is at the top of the page with its refusals, and
// the scope's refused series rises as it is refused again, without a
// reload; its reset button serves it again. The page asks nothing but its
// own URL and writes no error.
func TestLiveView(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			url := startPortal(t, "-framework", fw, "-num-proxies", "1", "-admin-token", liveToken,
				"-rates", "api.anon=3/min,100/day")
			const crawler = "198.51.100.23"
			// Another caller refused once, below the crawler.
			assert.Equal(t, []int{200, 200, 200, 429}, records(t, url, "192.0.2.50", 4))
			assert.Equal(t, []int{200, 200, 200, 429, 429, 429, 429}, records(t, url, crawler, 7))

			ctx := newBrowser(t)
			pl := record(t, ctx)
			// The operator's token, as a proxy or a browser extension would
			// add it; the portal takes it as a Basic password too.
			require.NoError(t, chromedp.Do(ctx,
				extraHeaders(network.Headers{"X-Admin-Token": liveToken}),
				chromedp.Navigate(url+"/debug/limits")))
			v := waitPage(t, ctx, "the live view", readLive, "the crawler at the top", func(v liveRow) bool { return v.Caller != "" })
			assert.Equal(t, liveRow{Caller: crawler, Scope: "api", Refusals: "4", Refused: "5", Drawn: true}, v)

			// Refused again: the page shows it without a reload.
			assert.Equal(t, []int{429, 429, 429}, records(t, url, crawler, 3))
			v = waitPage(t, ctx, "the live view", readLive, "the new refusals", func(v liveRow) bool { return v.Refusals == "7" })
			assert.Equal(t, "8", v.Refused, "the api scope's refused series")
			assert.Contains(t, v.Status, "updated ")
			loads, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType("navigation").length`))
			require.NoError(t, err)
			assert.Equal(t, 1, loads, "one page load: refreshed in place")

			// Reset: the crawler is served again.
			require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#refused button[data-caller="`+crawler+`"]`))))
			v = waitPage(t, ctx, "the live view", readLive, "the reset", func(v liveRow) bool { return v.Reset != "" })
			assert.Contains(t, v.Status, "reset "+crawler+" in api; updated ")
			assert.Equal(t, crawler, v.Caller)
			assert.Equal(t, []int{200, 200, 200, 429}, records(t, url, crawler, 4), "served again after the reset")
			v = waitPage(t, ctx, "the live view", readLive, "the refusal after the reset", func(v liveRow) bool { return v.Refusals == "8" })
			assert.Equal(t, "9", v.Refused)
			if fw == "gin" {
				// From its top to the end of its table.
				takeScreenshot(t, ctx, `document.getElementById("refused").getBoundingClientRect().bottom + window.scrollY + 16`, liveViewScreenshot)
			}

			// Nothing but the page's own URL, answered; no console error.
			xs := pl.Exchanges("")
			require.NotEmpty(t, xs)
			var posts int
			for _, x := range xs {
				assert.True(t, strings.HasPrefix(x.URL, url+"/debug/limits"), "a request outside the page: %s", x.URL)
				if x.Status != 0 {
					assert.Contains(t, []int64{http.StatusOK, http.StatusNoContent}, x.Status, x.URL)
				}
				if x.URL == url+"/debug/limits" {
					posts++
				}
			}
			assert.Equal(t, 2, posts, "the page's load and the reset's POST")
			assert.Empty(t, pl.Console(), "the page's console")
		})
	}
}
