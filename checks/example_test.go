package checks_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

func ExampleRun() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store})
	if err != nil {
		panic(err)
	}
	for _, m := range checks.Run(context.Background(), lim.Config()) {
		fmt.Println(m.ID, m.Level, m.Text)
	}
	// Output:
	// ratescope.W601 WARNING the number of proxies is not set.
	// ratescope.W602 WARNING counts are kept in this process's memory (*memstore.Store), not shared between processes.
}

// Before a limiter is built, Run reports what core.New would reject.
func ExampleRun_beforeNew() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	msgs := checks.Run(context.Background(), core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "60/minuets"},
		NumProxies: new(0),
	})
	for _, m := range msgs {
		fmt.Println(m.ID, m.Level)
	}
	// Output:
	// ratescope.E001 ERROR
}

// At startup, log what the checks find.
func ExampleLog() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	if err != nil {
		panic(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "hint" {
				return slog.Attr{}
			}
			return a
		},
	}))
	checks.Log(context.Background(), logger, checks.Run(context.Background(), lim.Config()))
	// Output:
	// level=WARN msg="ratescope: counts are kept in this process's memory (*memstore.Store), not shared between processes." id=ratescope.W602
}

// In a test or CI, fail on warnings, except those silenced.
func ExampleOptions() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	msgs, err := checks.Options{Silence: []string{"ratescope.W602"}, Strict: true}.Filter(checks.Run(ctx, lim.Config()))
	for _, m := range msgs {
		fmt.Println(m.ID)
	}
	fmt.Println(err)
	// Output:
	// ratescope.W601
	// checks: 1 failed: ratescope.W601 the number of proxies is not set.
}
