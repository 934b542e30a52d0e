package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromiumPath is the browser the tests drive, found by TestMain.
var chromiumPath string

// binDir holds the binaries that TestMain builds: the portal and the
// ratescope command.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	path, err := exec.LookPath("chromium")
	if err != nil {
		fmt.Fprintln(os.Stderr, "browsertest: chromium not found in $PATH: "+
			"run scripts/install-deps.sh (make test does) to install Debian's chromium; "+
			"these tests drive a real headless browser and never skip")
		return 1
	}
	chromiumPath = path
	dir, err := os.MkdirTemp("", "browsertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// The portal is built in its own module (ADR 0017), the command from
	// the root module, as a user builds them.
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "portal"), ".")
	build.Dir = "../examples/portal"
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "browsertest: building the portal:", err)
		return 1
	}
	build = exec.Command("go", "build", "-o", filepath.Join(dir, "ratescope"), "./cmd/ratescope")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "browsertest: building ratescope:", err)
		return 1
	}
	return m.Run()
}

// browserTimeout bounds each test's browser: starting it, every action and
// every wait.
const browserTimeout = 2 * time.Minute

// newBrowser starts a headless Chromium for the test and returns the
// context of its first tab, which ends with the test or after
// browserTimeout. The browser is stopped when the test ends.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	// Chromium leaves the directory of its singleton socket in $TMPDIR
	// when it is stopped: give it one that the test removes.
	tmp := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Env("TMPDIR="+tmp),
		// Chromium's sandbox refuses to run as root, as CI does; the
		// browser loads only the pages the tests serve on loopback.
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1200, 900),
	)
	timeout, cancelTimeout := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancelTimeout)
	alloc, cancelAlloc := chromedp.NewExecAllocator(timeout, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancel)
	// Start the browser and open the tab now, so that a missing or broken
	// browser fails here with its own error.
	require.NoError(t, chromedp.Do(ctx), "starting %s", chromiumPath)
	return ctx
}

// pageLog records what a tab did: every request it sent and every answer
// it got, and what it wrote to its console. Its methods are safe for
// concurrent use: the browser's events arrive on a goroutine of chromedp.
type pageLog struct {
	mu        sync.Mutex
	requests  []*network.EventRequestWillBeSent
	responses []*network.EventResponseReceived
	console   []string // console.error and warning calls, exceptions, browser log errors
	// changed has a value after each event recorded.
	changed chan struct{}
}

// record starts recording the tab of ctx.
func record(t *testing.T, ctx context.Context) *pageLog {
	t.Helper()
	l := &pageLog{changed: make(chan struct{}, 1)}
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		defer func() {
			select {
			case l.changed <- struct{}{}:
			default:
			}
		}()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			l.requests = append(l.requests, ev)
		case *network.EventResponseReceived:
			l.responses = append(l.responses, ev)
		case *runtime.EventExceptionThrown:
			l.console = append(l.console, "exception: "+ev.ExceptionDetails.Text+" "+exceptionDescription(ev.ExceptionDetails))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				l.console = append(l.console, fmt.Sprintf("console.%s: %s", ev.Type, consoleArgs(ev.Args)))
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				l.console = append(l.console, fmt.Sprintf("log %s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	}))
	return l
}

func exceptionDescription(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

func consoleArgs(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if a.Description != "" {
			parts = append(parts, a.Description)
		} else {
			parts = append(parts, string(a.Value))
		}
	}
	return strings.Join(parts, " ")
}

// Console returns what the tab wrote to its console that a person would
// see as an error or a warning, in order.
func (l *pageLog) Console() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.console...)
}

// exchange is one request of the tab and its answer, if it came.
type exchange struct {
	URL        string
	Sent       float64 // seconds, on the browser's monotonic clock
	Answered   float64 // 0 until the answer's headers came
	Status     int64
	RetryAfter string
}

// Exchanges returns the requests the tab sent whose URL starts with prefix,
// in the order they were sent, with their answers.
func (l *pageLog) Exchanges(prefix string) []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	byID := map[network.RequestID]*exchange{}
	var order []network.RequestID
	for _, r := range l.requests {
		if !strings.HasPrefix(r.Request.URL, prefix) {
			continue
		}
		byID[r.RequestID] = &exchange{URL: r.Request.URL, Sent: float64(r.Timestamp)}
		order = append(order, r.RequestID)
	}
	for _, r := range l.responses {
		x, ok := byID[r.RequestID]
		if !ok {
			continue
		}
		x.Answered, x.Status = float64(r.Timestamp), r.Response.Status
		for name, v := range r.Response.Headers {
			if strings.EqualFold(name, "Retry-After") {
				x.RetryAfter = fmt.Sprint(v)
			}
		}
	}
	out := make([]exchange, len(order))
	for i, id := range order {
		out[i] = *byID[id]
	}
	return out
}
