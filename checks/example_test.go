package checks_test

import (
	"context"
	"fmt"

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
	for _, m := range checks.Run(context.Background(), lim) {
		fmt.Println(m.ID, m.Level, m.Text)
	}
	// Output:
	// ratescope.W601 WARNING the number of proxies is not set.
	// ratescope.W602 WARNING counts are kept in this process's memory (*memstore.Store), not shared between processes.
}

func ExampleRunConfig() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	msgs := checks.RunConfig(core.Config{
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

// In a test or CI, fail on warnings, except those silenced.
func ExampleOptions() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	msgs, err := checks.Options{Silence: []string{checks.IDStoreNotShared}, Strict: true}.Run(ctx, lim)
	for _, m := range msgs {
		fmt.Println(m.ID)
	}
	fmt.Println(err)
	// Output:
	// ratescope.W601
	// checks: 1 failed: ratescope.W601 the number of proxies is not set.
}
