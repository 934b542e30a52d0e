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
// Each of these limits has a starting value of its own ([Scopes],
// [NewScope]), so a portal that replaces its dictionary of rates without
// naming these scopes still has working, limited search boxes. Name them to
// change them:
//
//	Rates: map[string]string{"autocomplete.project.anon": "30/min,500/day"}
//
// Over a limit, a search endpoint answers 429 with Retry-After and an empty
// list of results, in the shape a search returns ([Response]), before
// anything is searched. Packages ginsearch, echosearch and echo5search do
// that for Gin, Echo v4 and Echo v5.
package autocomplete

import (
	"github.com/ratescope/ratescope/autocomplete/internal/box"
	"github.com/ratescope/ratescope/core"
)

// names are the portal's nine search boxes.
var names = [...]string{"project", "dataset", "sample", "measurement", "person", "organization", "publication", "tag", "ror"}

// NewScope returns the scope of a search box called name,
// "autocomplete.NAME", with the starting values of every search box: 60/min
// and 2000/day for anonymous callers, 240/min and 10000/day for signed-in
// ones. That is generous for a person typing (a request every few hundred
// milliseconds while they type) and tight enough that a script cannot use a
// search box as a free API. Use it to add search boxes of your own.
func NewScope(name string) core.Scope {
	return core.Scope{
		Name: box.Scope(name),
		Anon: []core.Rate{core.PerMinute(60), core.PerDay(2000)},
		User: []core.Rate{core.PerMinute(240), core.PerDay(10000)},
	}
}

// Scopes returns the scopes of the nine search boxes, project, dataset,
// sample, measurement, person, organization, publication, tag and ror, in
// that order and with their starting values ([NewScope]). Add them to
// core.Config.Scopes:
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

// A Response is the body of a search endpoint: {"results": [...]}. A
// refused search answers the same shape with no results,
// {"results": []}, so a search box shows no suggestions rather than an
// error; Results must then be empty, not nil, which encodes as null.
type Response struct {
	Results []Result `json:"results"`
}
