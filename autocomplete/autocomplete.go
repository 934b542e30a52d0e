// Package autocomplete gives the search boxes of a portal limits of their
// own.
//
// The search boxes that choose a project, dataset, sample, measurement,
// person, organization, publication, tag or ROR entry send their requests to
// addresses of their own, open to anyone who can see the page. Typing comes
// in bursts that the API's figures were not set for, and a person filling in
// a form must never be locked out of the API they use in a script. So each
// search box has a scope of its own, "autocomplete.NAME", with a limit over a
// minute and a limit over a day for each kind of caller, counted like the
// API (by address, or by person when signed in): typing never uses up API
// allowance, and the API never uses up a search box's.
//
// Each of these limits has a starting value of its own ([Scopes]), so a
// portal that replaces its dictionary of rates without naming these scopes
// still has working, limited search boxes. Name them to change them:
//
//	Rates: map[string]string{"autocomplete.project.anon": "30/min,500/day"}
//
// Over a limit, a search endpoint answers 429 with Retry-After and an empty
// list of results, in the shape a search returns ([Empty]), before anything
// is searched. Packages ginsearch, echosearch and echo5search do that for
// Gin, Echo v4 and Echo v5.
package autocomplete

import (
	"fmt"
	"slices"

	"github.com/ratescope/ratescope/core"
)

// ScopePrefix starts the name of every search box's scope.
const ScopePrefix = "autocomplete."

// names are the portal's nine search boxes.
var names = [...]string{"project", "dataset", "sample", "measurement", "person", "organization", "publication", "tag", "ror"}

// Names returns the names of the nine search boxes: project, dataset,
// sample, measurement, person, organization, publication, tag and ror.
func Names() []string {
	return append([]string(nil), names[:]...)
}

// Scope returns the scope of the search box name: "autocomplete." + name.
func Scope(name string) string {
	return ScopePrefix + name
}

// NewScope returns the scope of a search box called name, with the starting
// values of every search box: 60/min and 2000/day for anonymous callers,
// 240/min and 10000/day for signed-in ones. That is generous for a person
// typing (a request every few hundred milliseconds while they type) and
// tight enough that a script cannot use a search box as a free API. Use it
// to add search boxes of your own.
func NewScope(name string) core.Scope {
	return core.Scope{
		Name: Scope(name),
		Anon: []core.Rate{core.PerMinute(60), core.PerDay(2000)},
		User: []core.Rate{core.PerMinute(240), core.PerDay(10000)},
	}
}

// Scopes returns the scopes of the nine search boxes, with their starting
// values. Add them to core.Config.Scopes:
//
//	Scopes: append(core.DefaultScopes(), autocomplete.Scopes()...)
func Scopes() []core.Scope {
	out := make([]core.Scope, len(names))
	for i, n := range names {
		out[i] = NewScope(n)
	}
	return out
}

// A Result is one entry a search box offers.
type Result struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// A Response is the body of a search endpoint: {"results": [...]}.
type Response struct {
	Results []Result `json:"results"`
}

// Empty returns the body of a refused search: {"results": []}, the shape of a
// search that found nothing, so a search box shows no suggestions rather
// than an error.
func Empty() Response {
	return Response{Results: []Result{}}
}

// CheckScope returns an error unless lim knows the scope of the search box
// called name, saying how to add it. The guards of packages ginsearch,
// echosearch and echo5search call it when they are built, so that a
// missing scope fails at startup.
func CheckScope(lim *core.Limiter, name string) error {
	if lim == nil {
		return nil // the adapter reports a missing limiter
	}
	if slices.ContainsFunc(lim.Config().Scopes, func(s core.Scope) bool { return s.Name == Scope(name) }) {
		return nil
	}
	return fmt.Errorf("search box %q: the limiter has no scope %q: add autocomplete.Scopes() (or autocomplete.NewScope(%q)) to core.Config.Scopes", name, Scope(name), name)
}
