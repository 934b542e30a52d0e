package portal

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/ratescope/ratescope/autocomplete"
)

// MaxResults is the most results a search returns.
const MaxResults = 10

// firstFew is how many results a search with an empty query returns: the
// first entries of the search box, for a box that was just focused.
const firstFew = 5

// SearchBoxes returns the names of the portal's search boxes, those of
// autocomplete.Scopes(), in its order. GET /autocomplete/NAME serves each,
// limited in scope autocomplete.NAME.
func SearchBoxes() []string {
	var names []string
	for _, s := range autocomplete.Scopes() {
		names = append(names, strings.TrimPrefix(s.Name, "autocomplete."))
	}
	return names
}

// searchCounts counts the searches each search box ran. The map is filled
// in once by newSearchCounts and only read afterwards, so it is safe for
// concurrent use.
type searchCounts map[string]*atomic.Int64

func newSearchCounts() searchCounts {
	counts := searchCounts{}
	for _, name := range SearchBoxes() {
		counts[name] = new(atomic.Int64)
	}
	return counts
}

// Search runs the search of the search box name for the text q and counts
// it in [App.Searches]. It returns the entries whose label contains q,
// ignoring case and the spaces around q, at most [MaxResults] of them in
// the box's order; for an empty q, the box's first five entries. Results is
// never nil, so a search that finds nothing is {"results": []}.
//
// For a name that is not one of [SearchBoxes] it returns no results and
// counts nothing. Search is safe for concurrent use. A request refused by
// the limiter must never reach it: the routes put the guard in front.
func (a *App) Search(name, q string) autocomplete.Response {
	n, ok := a.searches[name]
	if !ok {
		return autocomplete.Response{Results: []autocomplete.Result{}}
	}
	n.Add(1)
	return autocomplete.Response{Results: search(searchData[name], q)}
}

// Searches returns how many searches each search box has run since the App
// was built, keyed by name, with every one of [SearchBoxes]. It is the
// body of GET /debug/searches, so that a test can see that a refused request
// searched nothing. It is safe for concurrent use.
func (a *App) Searches() map[string]int64 {
	out := make(map[string]int64, len(a.searches))
	for name, n := range a.searches {
		out[name] = n.Load()
	}
	return out
}

// search returns the entries whose label contains q, ignoring case, at
// most MaxResults of them; or the first few for an empty q.
func search(entries []autocomplete.Result, q string) []autocomplete.Result {
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" {
		return append([]autocomplete.Result{}, entries[:min(firstFew, len(entries))]...)
	}
	out := []autocomplete.Result{}
	for _, e := range entries {
		if strings.Contains(strings.ToLower(e.Label), q) {
			out = append(out, e)
			if len(out) == MaxResults {
				break
			}
		}
	}
	return out
}

// searchData holds the made-up entries of each search box, with the ids
// NAME-01, NAME-02, ... in the order of the labels. It is never changed
// after it is built.
var searchData = entries(map[string][]string{
	"project": {
		"Harbour lighthouse survey", "Northern canal restoration", "Coastal erosion monitoring",
		"Alpine glacier mass balance", "Urban heat island study", "River sediment transport",
		"Peatland carbon inventory", "Seagrass meadow mapping", "Volcanic gas emissions",
		"Soil microbiome atlas", "Arctic sea ice thickness", "Wetland bird census",
	},
	"dataset": {
		"Lighthouse keeper logbooks", "Canal lock water levels", "Hourly weather station readings",
		"Glacier stake measurements", "Street temperature loggers", "Sediment core descriptions",
		"Peat depth transects", "Seagrass drone imagery",
	},
	"sample": {
		"Sediment core SC-12", "Peat core PC-03", "Seawater bottle SW-41", "Ice core IC-7",
		"Soil pit SP-22", "Basalt hand specimen B-5", "Seagrass shoot SG-18",
	},
	"measurement": {
		"Air temperature", "Water temperature", "Salinity", "Dissolved oxygen", "Wind speed",
		"Wind direction", "Relative humidity", "Ice thickness", "Sediment grain size",
		"Soil pH", "Carbon content", "Nitrogen content",
	},
	"person": {
		"Ada Lindqvist", "Bruno Okafor", "Chen Mei", "Dagny Halvorsen", "Emil Varga",
		"Farah Haddad", "Greta Moreau", "Hugo Tanaka", "Ines Castellano", "Jonas Eriksen",
		"Karin de Vries", "Luca Bianchi",
	},
	"organization": {
		"Northern Coastal Institute", "Alpine Research Station", "Institute of Wetland Ecology",
		"Harbour Heritage Society", "Polar Marine Laboratory", "Soil Survey Bureau",
	},
	"publication": {
		"A century of harbour lights", "Canal water levels, 1900-1950", "Erosion of the northern dunes",
		"Mass balance of a small alpine glacier", "Heat islands in coastal towns",
		"Carbon in northern peatlands", "Mapping seagrass from the air",
	},
	"tag": {
		"coastal", "glacier", "peatland", "seagrass", "sediment", "soil", "weather",
		"wetland", "volcanic", "urban", "arctic", "history",
	},
	"ror": {
		"Northern Coastal Institute", "Alpine Research Station", "Polar Marine Laboratory",
		"University of the Lakes", "College of the Fens", "Highland Observatory",
	},
})

// entries gives the labels of each search box their ids.
func entries(labels map[string][]string) map[string][]autocomplete.Result {
	out := make(map[string][]autocomplete.Result, len(labels))
	for name, ls := range labels {
		rs := make([]autocomplete.Result, len(ls))
		for i, l := range ls {
			rs[i] = autocomplete.Result{ID: fmt.Sprintf("%s-%02d", name, i+1), Label: l}
		}
		out[name] = rs
	}
	return out
}
