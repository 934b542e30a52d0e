package portal_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

func newApp(t *testing.T) *portal.App {
	t.Helper()
	o, err := portal.ParseFlags(nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	a, err := portal.New(o, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// ids returns the ids NAME-NN of the numbers ns.
func ids(name string, ns ...int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("%s-%02d", name, n)
	}
	return out
}

func TestSearch(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	tests := []struct {
		name string
		box  string
		q    string
		want []string // ids, in order
	}{
		{name: "empty query gives the first few", box: "project", q: "", want: ids("project", 1, 2, 3, 4, 5)},
		{name: "blank query gives the first few", box: "tag", q: "  ", want: ids("tag", 1, 2, 3, 4, 5)},
		{name: "fewer entries than the first few", box: "ror", q: "", want: ids("ror", 1, 2, 3, 4, 5)},
		{name: "substring", box: "publication", q: "glacier", want: ids("publication", 4)},
		{name: "case ignored", box: "project", q: "AN", want: ids("project", 2, 4, 5, 6, 7, 9, 12)},
		{name: "case ignored in the label", box: "measurement", q: "ph", want: ids("measurement", 10)},
		{name: "spaces around the query ignored", box: "sample", q: " ice ", want: ids("sample", 4)},
		{name: "at most ten, in order", box: "person", q: "a", want: ids("person", 1, 2, 4, 5, 6, 7, 8, 9, 10, 11)},
		{name: "no match", box: "dataset", q: "zebra", want: []string{}},
		{name: "unknown search box", box: "projekt", q: "", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := a.Search(tt.box, tt.q)
			require.NotNil(t, got.Results, "results must encode as [], not null")
			gotIDs := []string{}
			for _, r := range got.Results {
				gotIDs = append(gotIDs, r.ID)
				if strings.TrimSpace(tt.q) != "" {
					assert.Contains(t, strings.ToLower(r.Label), strings.ToLower(strings.TrimSpace(tt.q)), "result %s", r.ID)
				}
			}
			assert.Equal(t, tt.want, gotIDs)
			assert.LessOrEqual(t, len(got.Results), portal.MaxResults)
		})
	}
}

func TestSearchBoxes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	require.Equal(t, []string{"project", "dataset", "sample", "measurement", "person", "organization", "publication", "tag", "ror"}, portal.SearchBoxes())
	for _, box := range portal.SearchBoxes() {
		first := a.Search(box, "")
		require.NotEmpty(t, first.Results, "search box %s has no entries", box)
		for _, r := range first.Results {
			assert.True(t, strings.HasPrefix(r.ID, box+"-"), "search box %s: id %q", box, r.ID)
			// Each entry is found by its own label.
			found := a.Search(box, strings.ToUpper(r.Label))
			assert.Contains(t, found.Results, r, "search box %s: %q", box, r.Label)
		}
		assert.True(t, slices.ContainsFunc(a.Limiter.Config().Scopes, func(s core.Scope) bool { return s.Name == "autocomplete."+box }), "the limiter has no scope for %s", box)
	}
}

func TestSearchJSON(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	b, err := json.Marshal(a.Search("tag", "soil"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"results":[{"id":"tag-06","label":"soil"}]}`, string(b))
	b, err = json.Marshal(a.Search("tag", "nothing like it"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"results":[]}`, string(b))
}

func TestSearches(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	zero := map[string]int64{}
	for _, box := range portal.SearchBoxes() {
		zero[box] = 0
	}
	assert.Equal(t, zero, a.Searches())

	const workers, each = 8, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				a.Search("project", "a")
				a.Search("tag", "")
				a.Search("projekt", "a") // unknown: not counted
				_ = a.Searches()
			}
		})
	}
	wg.Wait()

	want := zero
	want["project"] = workers * each
	want["tag"] = workers * each
	assert.Equal(t, want, a.Searches())

	// The map returned is a copy.
	got := a.Searches()
	got["project"] = 0
	assert.Equal(t, int64(workers*each), a.Searches()["project"])
}

// TestHowToQueryMatches runs the search of the how-to "protect a search
// box" against the portal: its query finds a project. It queried ?q=cor,
// which matched nothing, before issue 18.
func TestHowToQueryMatches(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "howto", "protect-a-search-box.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`/autocomplete/(\w+)\?q=(\w+)`).FindAllStringSubmatch(string(md), -1)
	require.NotEmpty(t, m, "the how-to queries a search box")
	for _, q := range m {
		assert.NotEmpty(t, newApp(t).Search(q[1], q[2]).Results, "the how-to's %s finds something", q[0])
	}
}
