package autocomplete_test

import (
	"fmt"
	"strings"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// Add the nine search boxes and one of your own, "instrument", then change
// the limits of one of them for anonymous callers. The others keep their
// starting values.
func ExampleNewScope() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Scopes:     append(core.DefaultScopes(), append(autocomplete.Scopes(), autocomplete.NewScope("instrument"))...),
		Rates:      map[string]string{"autocomplete.project.anon": "30/min,500/day"},
		NumProxies: new(1),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range lim.Config().Scopes {
		if strings.HasPrefix(s.Name, "autocomplete.") {
			fmt.Println(s.Name, "anon", s.Anon, "user", s.User)
		}
	}
	// Output:
	// autocomplete.dataset anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.instrument anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.measurement anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.organization anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.person anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.project anon [30/min 500/day] user [240/min 10000/day]
	// autocomplete.publication anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.ror anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.sample anon [60/min 2000/day] user [240/min 10000/day]
	// autocomplete.tag anon [60/min 2000/day] user [240/min 10000/day]
}
