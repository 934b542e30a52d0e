package browsertest_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stripView is one strip of a live view chart as the browser drew it.
type stripView struct {
	Outcome string  `json:"outcome"`
	Total   string  `json:"total"`  // the legend's data-total
	Height  float64 `json:"height"` // of the strip's SVG, in CSS pixels
	Drawn   float64 `json:"drawn"`  // of its polyline's bounding box, in CSS pixels
	Colour  string  `json:"colour"` // the polyline's stroke
}

// readStrips reads the strips of scope api's anonymous callers.
var readStrips = chromedp.Evaluate[[]stripView](`Array.from(
	document.querySelectorAll('section.chart[data-scope="api"][data-kind="anon"] .strip'), s => {
	const line = s.querySelector("polyline");
	const li = s.closest("section").querySelector('.legend li[data-outcome="' + s.dataset.outcome + '"]');
	return {
		outcome: s.dataset.outcome,
		total: li ? li.dataset.total : "",
		height: s.querySelector("svg").getBoundingClientRect().height,
		drawn: line ? line.getBoundingClientRect().height : 0,
		colour: line ? getComputedStyle(line).stroke : "",
	};
})`)

// The live view after a burst then a steady hammering, on each framework:
// 160 callers ask once each within about a second (allowed), then another
// caller asks 5 times a second for 3 seconds, over its limit of 3 a
// minute (3 allowed, 12 refused). The refused strip shows the steady 5/s
// beside the burst's 160/s at a height an operator sees (on a linear
// scale it was 1 or 2 pixels of 40), the allowed strip the burst, each
// in a colour of its own.
func TestLiveViewBurstThenSteady(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			url := startPortal(t, "-framework", fw, "-num-proxies", "1", "-admin-token", liveToken,
				"-rates", "api.anon=3/min,100/day")
			// The burst: 160 callers, 16 at a time.
			client := &http.Client{Timeout: 10 * time.Second}
			var wg sync.WaitGroup
			statuses := make(chan string, 160)
			for g := range 16 {
				wg.Go(func() {
					for i := range 10 {
						status, err := askRecords(client, url, fmt.Sprintf("198.51.%d.%d", 100+g, 1+i))
						statuses <- fmt.Sprint(status, err)
					}
				})
			}
			wg.Wait()
			close(statuses)
			for got := range statuses {
				require.Equal(t, "200 <nil>", got, "each caller of the burst asks once")
			}
			// The steady hammering: 5 a second for 3 seconds, each 5 sent
			// at the start of a second of the clock, so that a second of
			// the view counts them all however slow the machine is.
			var steady []int
			for range 3 {
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
				steady = append(steady, records(t, url, "203.0.113.99", 5)...)
			}
			assert.Equal(t, []int{200, 200, 200, 429, 429, 429, 429, 429, 429, 429, 429, 429, 429, 429, 429}, steady)

			ctx := newBrowser(t)
			require.NoError(t, chromedp.Do(ctx,
				extraHeaders(network.Headers{"X-Admin-Token": liveToken}),
				chromedp.Navigate(url+"/debug/limits")))
			strips := waitPage(t, ctx, "the live view", readStrips, "the allowed and refused strips", func(v []stripView) bool { return len(v) == 2 })
			byOutcome := map[string]stripView{}
			for _, s := range strips {
				byOutcome[s.Outcome] = s
			}
			t.Logf("strips: %+v", strips)
			allowed, refused := byOutcome["allowed"], byOutcome["denied"]
			assert.Equal(t, "163", allowed.Total)
			assert.Equal(t, "12", refused.Total)
			for _, s := range []stripView{allowed, refused} {
				require.Positive(t, s.Height, "%s drawn", s.Outcome)
			}
			// The burst's peak is at the top of its strip (a second may
			// hold part of it only, on a loaded machine: at least half).
			assert.Greater(t, allowed.Drawn/allowed.Height, 0.5, "the allowed strip: %+v", allowed)
			// The steady refusals, 5 a second under a peak of up to 160:
			// about a third of the strip on the log scale, not the 3% of
			// a linear one.
			assert.Greater(t, refused.Drawn/refused.Height, 0.2, "the refused strip: %+v", refused)
			assert.GreaterOrEqual(t, refused.Drawn, 6.0, "the refused strip, in pixels: %+v", refused)
			assert.NotEqual(t, allowed.Colour, refused.Colour)
		})
	}
}

// askRecords asks GET /api/records once as the anonymous caller behind the
// portal's proxy at address xff, with client, and returns the status: for
// a goroutine other than the test's, which must not call require.
func askRecords(client *http.Client, url, xff string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url+"/api/records", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Forwarded-For", xff)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, resp.Body.Close()
}
