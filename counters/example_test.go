package counters_test

import (
	"fmt"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/counters"
)

func Example() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, NumProxies: new(1)})
	if err != nil {
		panic(err)
	}
	var watched counters.Set
	watched.Add(lim)   // its store failures
	watched.Add(store) // its evictions

	// At each scrape or collection:
	t := watched.Totals()
	if t.HasStoreFailures {
		fmt.Println("store failures", t.StoreFailures)
	}
	if t.HasEvictions {
		fmt.Println("evictions", t.Evictions)
	}
	if t.HasRedis {
		fmt.Println("redis calls", t.Redis.Calls)
	}
	// Output:
	// store failures 0
	// evictions 0
}
