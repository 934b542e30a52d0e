package browsertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/autocomplete"
)

// frameworks are the portal's -framework values (portal.Frameworks, which
// this module cannot import): the page must work on each. A framework
// added to the portal is added here.
var frameworks = []string{"gin", "echo", "echo5"}

// The limits of the portals these tests start: the project search box
// allows searchLimit searches in searchPeriod, so that typing fast reaches
// it and the wait is a few seconds; the API has a limit of its own.
const (
	searchLimit  = 3
	searchPeriod = "5s"
	apiRates     = "api.anon=5/min,100/day"
)

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPortal runs the portal with args on a free loopback port, counts in
// memory, and returns its base URL once /healthz answers. The process is
// stopped when the test ends.
func startPortal(t *testing.T, args ...string) string {
	t.Helper()
	return startServer(t, filepath.Join(binDir, "portal"), func(addr string) []string {
		return append([]string{"-addr", addr, "-redis", ""}, args...)
	}, "/healthz", 30*time.Second)
}

// startServer runs the program bin with the arguments args gives for a
// free loopback address, waits until GET ready answers 200 OK, and returns
// its base URL; the test's cleanup kills it. It fails the test with the
// program's output if it exits or is not ready within timeout.
func startServer(t *testing.T, bin string, args func(addr string) []string, ready string, timeout time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	out := &syncBuffer{}
	argv := args(addr)
	cmd := exec.Command(bin, argv...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	url := "http://" + addr
	client := &http.Client{Timeout: time.Second}
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(url + ready)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case <-exited:
			t.Fatalf("%s %v exited before it was ready:\n%s", filepath.Base(bin), argv, out)
		case <-deadline:
			t.Fatalf("%s %v not ready after %v: %v\n%s", filepath.Base(bin), argv, timeout, err, out)
		case <-tick.C:
		}
	}
}

// searches returns the portal's /debug/searches: the searches each box ran.
func searches(t *testing.T, url string) map[string]int64 {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url + "/debug/searches")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out map[string]int64
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// boxView is what a search box shows, read from the page in one go.
type boxView struct {
	State      string   `json:"state"`
	RetryAfter string   `json:"retryAfter"`
	Status     string   `json:"status"`
	Results    []string `json:"results"`
	Text       string   `json:"text"`
}

// viewBox reads the search box name.
func viewBox(name string) chromedp.Action[boxView] {
	return chromedp.Evaluate[boxView](fmt.Sprintf(`(() => {
		const box = document.getElementById("box-" + %q);
		return {
			state: box.dataset.state,
			retryAfter: box.dataset.retryAfter || "",
			status: box.querySelector(".status").textContent,
			results: Array.from(box.querySelectorAll(".results li"), li => li.textContent),
			text: box.querySelector("input").value,
		};
	})()`, name))
}

// waitTimeout bounds each wait for the page to show something.
const waitTimeout = 30 * time.Second

// waitBox waits until the search box name shows what ok accepts, at most
// waitTimeout, and returns it.
func waitBox(t *testing.T, ctx context.Context, name string, what string, ok func(boxView) bool) boxView {
	t.Helper()
	return waitPage(t, ctx, "box "+name, viewBox(name), what, ok)
}

// waitPage runs read, which reads page from the tab of ctx, until ok
// accepts what it returns, at most waitTimeout, and returns that: what
// says what the test waits for.
func waitPage[T any](t *testing.T, ctx context.Context, page string, read chromedp.Action[T], what string, ok func(T) bool) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	var last T
	for {
		v, err := chromedp.Run(ctx, read)
		require.NoError(t, err, "reading %s, waiting for %s", page, what)
		if ok(v) {
			return v
		}
		last = v
		select {
		case <-ctx.Done():
			t.Fatalf("%s: waiting for %s: %v; it shows %+v", page, what, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The portal's page: the nine search boxes, each asking its own endpoint as
// the user types; typing fast into one reaches its limit, and the page
// shows the wait that Retry-After asks for, sends nothing during it, then
// searches again, while the other boxes and the API's allowance are
// untouched.
func TestPortalSearchBoxes(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			url := startPortal(t, "-framework", fw, "-num-proxies", "0",
				"-rates", fmt.Sprintf("autocomplete.project.anon=%d/%s %s", searchLimit, searchPeriod, apiRates))
			ctx := newBrowser(t)
			pl := record(t, ctx)
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url+"/")))

			boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
				`Array.from(document.querySelectorAll("[data-box]"), el => el.dataset.box)`))
			require.NoError(t, err)
			assert.Equal(t, searchBoxes(), boxes, "the page's search boxes")

			// Another box first: its results come as the user types.
			require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#search-dataset"), "canal")))
			v := waitBox(t, ctx, "dataset", "the results of canal", func(v boxView) bool {
				return v.State == "idle" && v.Text == "canal" && len(v.Results) > 0 && strings.HasPrefix(lastQuery(pl, url, "dataset"), "canal")
			})
			assert.Equal(t, []string{"Canal lock water levels"}, v.Results)

			// Type fast into the project box until it is refused: the
			// box asks as the keys come, one request at a time.
			const phrase = "Alpine glacier mass balance"
			require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#search-project"), phrase)))
			for i := 0; ; i++ {
				v, err := chromedp.Run(ctx, viewBox("project"))
				require.NoError(t, err)
				if v.State == "waiting" {
					break
				}
				require.Less(t, i, 200, "the project box never reached its limit: %+v", v)
				// More keys, leaving the text as it was.
				require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#search-project"), " "+kb.Backspace)))
			}
			refused := firstRefused(t, pl, url+"/autocomplete/project")
			wait, err := strconv.Atoi(refused.RetryAfter)
			require.NoError(t, err, "Retry-After %q", refused.RetryAfter)
			require.GreaterOrEqual(t, wait, 1)

			// The page says so: the wait from Retry-After.
			v = waitBox(t, ctx, "project", "the wait", func(v boxView) bool { return v.State == "waiting" })
			assert.Equal(t, refused.RetryAfter, v.RetryAfter)
			assert.Contains(t, v.Status, fmt.Sprintf("wait %d s (Retry-After)", wait))
			before := searches(t, url)

			// The user keeps typing during the wait, another text: nothing
			// is searched. The box is read after the count, so the count
			// was taken during the wait.
			const during = "soil"
			require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#search-project"), strings.Repeat(kb.Backspace, len(phrase))+during)))
			counted := searches(t, url)
			v, err = chromedp.Run(ctx, viewBox("project"))
			require.NoError(t, err)
			require.Equal(t, "waiting", v.State,
				"the project box is not waiting once the test typed (the wait ended too soon for the test, or the page asked during it): %+v", v)
			assert.Equal(t, during, v.Text)
			assert.Equal(t, before["project"], counted["project"], "the project box searched during the wait")
			// Another box still searches meanwhile: counted apart.
			require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#search-person"), "emil")))
			waitBox(t, ctx, "person", "the results of emil", func(v boxView) bool {
				return v.State == "idle" && len(v.Results) == 1 && v.Results[0] == "Emil Varga"
			})

			// After the wait it searches again, for the text in the box.
			v = waitBox(t, ctx, "project", "the results of the text typed during the wait", func(v boxView) bool {
				return v.State == "idle" && len(v.Results) > 0 && v.Results[0] != phrase
			})
			assert.Equal(t, []string{"Soil microbiome atlas"}, v.Results)
			assert.Empty(t, v.Status)

			// No request left the page during the wait: the first one
			// after the refusal was sent once Retry-After had passed, and
			// asked for the text in the box.
			var after []exchange
			xs := waitExchanges(t, pl, url+"/autocomplete/project", "an answered request after the refusal", func(xs []exchange) bool {
				after = after[:0]
				for _, x := range xs {
					if x.Sent > refused.Answered {
						after = append(after, x)
					}
				}
				return len(after) > 0 && after[len(after)-1].Status != 0
			})
			assert.GreaterOrEqual(t, after[0].Sent-refused.Answered, float64(wait)-timerSlack,
				"a request was sent %.3fs after a 429 with Retry-After %d: %+v", after[0].Sent-refused.Answered, wait, xs)
			assert.Equal(t, http.StatusOK, int(after[0].Status), "the search after the wait")
			assert.Equal(t, url+"/autocomplete/project?q="+during, after[0].URL)
			t.Logf("project box: %d requests, Retry-After %d s, next request %.3f s after the refusal",
				len(xs), wait, after[0].Sent-refused.Answered)

			// Every answered search ran once, every refused one never.
			final := searches(t, url)
			var ok int64
			for _, x := range xs {
				if x.Status == http.StatusOK {
					ok++
				}
			}
			assert.Equal(t, ok, final["project"], "searches run by the project box: %+v", xs)
			assert.GreaterOrEqual(t, final["project"], int64(searchLimit)+1)
			for _, name := range searchBoxes() {
				switch name {
				case "project":
				case "dataset", "person":
					assert.Positive(t, final[name], name)
				default:
					assert.Zero(t, final[name], "box %s searched, never typed in", name)
				}
			}

			// The API's allowance is untouched: the browser and this test
			// are the same anonymous caller, 127.0.0.1.
			assertAPIUntouched(t, url)
			// The page wrote no error: a refused search is not one (the
			// browser's own network log line for a 429 is left out).
			for _, m := range pl.Console() {
				if strings.Contains(m, "status of 429") && strings.Contains(m, "/autocomplete/project") {
					continue
				}
				t.Errorf("console: %s", m)
			}
		})
	}
}

// timerSlack is how much earlier than Retry-After after the refusal's
// answer the browser may stamp the next request: the page starts its
// wait after the answer arrived, but the two stamps come from different
// parts of the browser.
const timerSlack = 0.05

// lastQuery returns the q of the last request the page sent for the box
// name.
func lastQuery(pl *pageLog, url, name string) string {
	xs := pl.Exchanges(url + "/autocomplete/" + name + "?")
	if len(xs) == 0 {
		return ""
	}
	_, q, _ := strings.Cut(xs[len(xs)-1].URL, "?q=")
	return q
}

// waitExchanges waits until the requests of the page to URLs starting with
// prefix are as ok accepts, at most waitTimeout, and returns them. The
// browser reports a request and its answer on its own, a little after the
// page may have shown it.
func waitExchanges(t *testing.T, pl *pageLog, prefix, what string, ok func([]exchange) bool) []exchange {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		xs := pl.Exchanges(prefix)
		if ok(xs) {
			return xs
		}
		select {
		case <-pl.changed:
		case <-timeout.C:
			t.Fatalf("requests to %s: waiting for %s; there were %+v", prefix, what, xs)
		}
	}
}

// firstRefused returns the first request of the page to URLs starting with
// prefix that was answered 429.
func firstRefused(t *testing.T, pl *pageLog, prefix string) exchange {
	t.Helper()
	var refused exchange
	waitExchanges(t, pl, prefix, "a refusal", func(xs []exchange) bool {
		for _, x := range xs {
			if x.Status == http.StatusTooManyRequests {
				refused = x
				return true
			}
		}
		return false
	})
	return refused
}

// ratePart matches one limit of the RateLimit and RateLimit-Policy headers:
// "api.anon.min";r=4 (";t=N" follows on a limit without room) or "api.anon.min";q=5;w=60.
var ratePart = regexp.MustCompile(`"([^"]+)";(?:r|q)=(\d+)`)

// assertAPIUntouched asks GET /api/records once and checks that it is the
// first request counted in each of the API's limits: remaining is the
// limit less one.
func assertAPIUntouched(t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url + "/api/records")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parse := func(h string) map[string]int {
		out := map[string]int{}
		for _, m := range ratePart.FindAllStringSubmatch(h, -1) {
			n, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			out[m[1]] = n
		}
		return out
	}
	quota := parse(resp.Header.Get("Ratelimit-Policy"))
	remaining := parse(resp.Header.Get("Ratelimit"))
	require.Len(t, quota, 2, "RateLimit-Policy %q", resp.Header.Get("Ratelimit-Policy"))
	for name, q := range quota {
		require.True(t, strings.HasPrefix(name, "api.anon."), name)
		assert.Equal(t, q-1, remaining[name], "remaining of %s after the API's first request", name)
	}
}

// searchBoxes returns the names of the search boxes of
// autocomplete.Scopes(), in its order.
func searchBoxes() []string {
	var names []string
	for _, s := range autocomplete.Scopes() {
		names = append(names, strings.TrimPrefix(s.Name, "autocomplete."))
	}
	return names
}
