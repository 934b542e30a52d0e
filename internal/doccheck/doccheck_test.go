package doccheck_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/doccheck"
)

// repoRoot is the root of the module, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "repository root not found")
	return root
}

func readPage(root string) func(string) (doccheck.Page, error) {
	return func(rel string) (doccheck.Page, error) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return doccheck.Page{}, err
		}
		return doccheck.Parse(string(b)), nil
	}
}

// TestDocs runs both checks on README.md and docs/**/*.md.
func TestDocs(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	corpus, err := doccheck.LoadCorpus(root, "internal/doccheck")
	require.NoError(t, err)
	pages, err := doccheck.Pages(root)
	require.NoError(t, err)
	require.Contains(t, pages, "README.md")
	snippets := 0
	for _, file := range pages {
		page, err := readPage(root)(file)
		require.NoError(t, err)
		for _, b := range page.Blocks {
			if b.IsGo() {
				snippets++
			}
		}
		for _, p := range corpus.CheckSnippets(file, page) {
			t.Error(p)
		}
		for _, p := range corpus.CheckExamples(file, page) {
			t.Error(p)
		}
		for _, p := range doccheck.CheckLinks(root, file, page, readPage(root)) {
			t.Error(p)
		}
		for _, p := range doccheck.CheckTables(file, page) {
			t.Error(p)
		}
	}
	assert.Positive(t, snippets, "no Go snippet found: is the parser broken?")
}

// TestConfigTables checks that the reference's table of each config
// struct has one row per field: a field added to the struct needs its row,
// and a row cannot be written twice.
func TestConfigTables(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	page, err := readPage(root)("docs/reference.md")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, dir, heading string
	}{
		{name: "core.Config", dir: "core", heading: "core.Config"},
		{name: "liveview.Config", dir: "liveview", heading: "The live view"},
		{name: "memstore.Config", dir: "core/memstore", heading: "memstore.Config"},
		{name: "redisstore.Config", dir: "core/redisstore", heading: "redisstore.Config"},
		{name: "ginlimit.Config", dir: "ginlimit", heading: "ginlimit.Config and echolimit.Config"},
		{name: "echolimit.Config", dir: "echolimit", heading: "ginlimit.Config and echolimit.Config"},
		{name: "echo5limit.Config", dir: "echo5limit", heading: "ginlimit.Config and echolimit.Config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fields, err := doccheck.Fields(filepath.Join(root, tc.dir), "Config")
			require.NoError(t, err)
			require.NotEmpty(t, fields)
			for _, p := range doccheck.CheckFieldTable("docs/reference.md", page, tc.heading, fields) {
				t.Error(p)
			}
		})
	}
}

// TestScopeFields checks that the reference's paragraph on core.Scope
// names every field of core.Scope once, as a code span.
func TestScopeFields(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	page, err := readPage(root)("docs/reference.md")
	require.NoError(t, err)
	var para []string
	for _, l := range page.Prose {
		if strings.HasPrefix(l, "`core.Scope` has the fields") || len(para) > 0 && l != "" {
			para = append(para, l)
		} else if len(para) > 0 {
			break
		}
	}
	require.NotEmpty(t, para, "no paragraph starting with `core.Scope` has the fields")
	text := strings.Join(para, " ")
	fields, err := doccheck.Fields(filepath.Join(root, "core"), "Scope")
	require.NoError(t, err)
	require.NotEmpty(t, fields)
	for _, f := range fields {
		assert.Equal(t, 1, strings.Count(text, "`"+f+"`"), "the paragraph names %s once: %s", f, text)
	}
}

func TestTables(t *testing.T) {
	t.Parallel()
	page := doccheck.Parse(strings.Join([]string{
		"## core.Config",                        // 1
		"",                                      // 2
		"| Setting | Type | What |",             // 3
		"| --- | --- | --- |",                   // 4
		"| `Store` | `core.Store` | required |", // 5
		"| `Observe` | `func(a \\| b)` | a `x | y` code span |", // 6
		"| `Observe` | `func()` | again |",                      // 7
		"## Other",                                              // 8
		"| Setting | What |",                                    // 9
		"|:--|--:|",                                             // 10
		"| `Store` | another table |",                           // 11
		"| `Extra` | no field |",                                // 12
		"| unset | a key of two columns |",                      // 13
		"| unset | may repeat |",                                // 14
		"| plain | twice |",                                     // 15
		"| plain | twice |",                                     // 16
	}, "\n"))
	tables := doccheck.Tables(page)
	require.Len(t, tables, 2)
	assert.Equal(t, "core.Config", tables[0].Heading)
	assert.Equal(t, 3, tables[0].Line)
	assert.Equal(t, []string{"Setting", "Type", "What"}, tables[0].Header)
	require.Len(t, tables[0].Rows, 3)
	assert.Equal(t, doccheck.Row{Line: 6, Cells: []string{"`Observe`", "`func(a \\| b)`", "a `x | y` code span"}}, tables[0].Rows[1])
	assert.Equal(t, "Other", tables[1].Heading)
	assert.Len(t, tables[1].Rows, 6)

	var got []string
	for _, p := range doccheck.CheckTables("docs/reference.md", page) {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		"docs/reference.md:7: table row `Observe` repeats the first cell of line 6",
		"docs/reference.md:16: table row repeats line 15",
	}, got, "the rows of another table may repeat a name, and a first cell of plain text may repeat")

	got = nil
	for _, p := range doccheck.CheckFieldTable("docs/reference.md", page, "core.Config", []string{"Store", "Observe", "Now"}) {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		`docs/reference.md:7: table under "core.Config": a second row for Observe`,
		`docs/reference.md:3: table under "core.Config": no row for the field Now`,
	}, got)
	got = nil
	for _, p := range doccheck.CheckFieldTable("docs/reference.md", page, "Other", []string{"Store", "Extra", "unset", "plain"}) {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		`docs/reference.md:14: table under "Other": a second row for unset`,
		`docs/reference.md:16: table under "Other": a second row for plain`,
	}, got)
	got = nil
	for _, p := range doccheck.CheckFieldTable("docs/reference.md", page, "Other", []string{"Store", "unset", "plain"}) {
		got = append(got, p.String())
	}
	assert.Contains(t, got, `docs/reference.md:12: table under "Other": a row for Extra, which is no field`)
	assert.NotEmpty(t, doccheck.CheckFieldTable("docs/reference.md", page, "Missing", nil))
}

func TestParse(t *testing.T) {
	t.Parallel()
	page := doccheck.Parse("# Title\n\n```go\nx := 1\n```\n\n  ~~~~ sh\n  ls\n  ~~~\n  ~~~~\ntext\n````\nopen")
	require.Len(t, page.Blocks, 3)
	assert.Equal(t, doccheck.Block{Info: "go", Start: 4, Lines: []string{"x := 1"}}, page.Blocks[0])
	assert.Equal(t, doccheck.Block{Info: "sh", Start: 8, Lines: []string{"  ls", "  ~~~"}}, page.Blocks[1], "a shorter fence does not close")
	assert.Equal(t, []string{"open"}, page.Blocks[2].Lines, "an unclosed fence runs to the end")
	assert.Equal(t, "# Title", page.Prose[0])
	assert.Equal(t, "", page.Prose[3], "code is not prose")
	assert.Equal(t, "text", page.Prose[10])
}

func TestIsGo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		info string
		want bool
	}{
		{info: "go", want: true},
		{info: "go title", want: true},
		{info: "go nocheck", want: true},
		{info: "golang", want: false},
		{info: "sh", want: false},
		{info: "", want: false},
		{info: "mermaid", want: false},
	} {
		assert.Equal(t, tc.want, doccheck.Block{Info: tc.info}.IsGo(), tc.info)
	}
	assert.True(t, doccheck.Block{Info: "text output"}.IsOutput())
	assert.False(t, doccheck.Block{Info: "text"}.IsOutput())
	assert.False(t, doccheck.Block{Info: "go output"}.IsOutput())
}

func TestCheckSnippets(t *testing.T) {
	t.Parallel()
	corpus := &doccheck.Corpus{}
	corpus.Add("package x\n\nfunc Example() {\n\tlim, err := core.New(core.Config{\n\t\tStore:  store,\n\n\t\tRates:  rates,\n\t})\n\t_ = lim\n\t// Output:\n\t// 200 records\n\t//   Retry-After: 75\n}\n\n// 429\nvar x = 1\n// after code\n")
	for _, tc := range []struct {
		name string
		md   string
		want []string
	}{
		{
			name: "exact copy, other indentation, blank line dropped, aligned differently",
			md:   "```go\nlim, err := core.New(core.Config{\n    Store: store,\n    Rates:      rates,\n})\n```\n",
		},
		{
			name: "parts between elisions, in order, from one file",
			md:   "```go\nlim, err := core.New(core.Config{\n...\n_ = lim\n```\n",
		},
		{
			name: "parts between elisions out of order",
			md:   "```go\n_ = lim\n...\nStore: store,\n```\n",
			want: []string{`README.md:4: Go snippet (from line 2) matches no Go file of the repository; first unmatched line: "Store: store,"`},
		},
		{
			name: "an elision alone",
			md:   "```go\n...\n```\n",
			want: []string{`README.md:2: Go snippet (from line 2) matches no Go file of the repository; first unmatched line: "..."`},
		},
		{
			name: "not Go",
			md:   "```sh\nmake test\n```\n",
		},
		{
			name: "no opting out",
			md:   "```go nocheck\nanything at all\n```\n",
			want: []string{`README.md:2: Go snippet (from line 2) matches no Go file of the repository; first unmatched line: "anything at all"`},
		},
		{
			name: "changed line",
			md:   "text\n\n```go\nlim, err := core.New(core.Config{\n\tStore: store,\n\tRates: other,\n})\n```\n",
			want: []string{`README.md:6: Go snippet (from line 4) matches no Go file of the repository; first unmatched line: "Rates: other,"`},
		},
		{
			name: "first line unknown",
			md:   "```go\nfoo()\n```\n",
			want: []string{`README.md:2: Go snippet (from line 2) matches no Go file of the repository; first unmatched line: "foo()"`},
		},
		{
			name: "lines out of order",
			md:   "```go\nRates: rates,\nStore: store,\n```\n",
			want: []string{`README.md:3: Go snippet (from line 2) matches no Go file of the repository; first unmatched line: "Store: store,"`},
		},
		{
			name: "part of a line is not a line",
			md:   "```go\nerr := core.New(core.Config{\n```\n",
			want: []string{`README.md:2: Go snippet (from line 2) matches no Go file of the repository; first unmatched line: "err := core.New(core.Config{"`},
		},
		{
			name: "output copied from an Output comment",
			md:   "```text output\n200 records\n    Retry-After:   75\n```\n",
		},
		{
			name: "output that is not in a comment",
			md:   "```text output\n200 records\nRetry-After: 76\n```\n",
			want: []string{`README.md:3: output (from line 2) matches no Go file of the repository; first unmatched line: "Retry-After: 76" (quote the // Output: comment`},
		},
		{
			name: "output across code is not one comment",
			md:   "```text output\n429\nafter code\n```\n",
			want: []string{`README.md:3: output (from line 2) matches no Go file of the repository; first unmatched line: "after code"`},
		},
		{
			name: "output is not code",
			md:   "```text output\nStore: store,\n```\n",
			want: []string{`README.md:2: output (from line 2)`},
		},
		{
			name: "plain text is not checked",
			md:   "```text\nanything\n```\n",
		},
		{
			name: "empty",
			md:   "```go\n\n```\n",
			want: []string{"README.md:2: empty Go snippet"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range corpus.CheckSnippets("README.md", doccheck.Parse(tc.md)) {
				got = append(got, p.String())
			}
			assert.Len(t, got, len(tc.want))
			for i := range min(len(got), len(tc.want)) {
				assert.True(t, strings.HasPrefix(got[i], tc.want[i]), "want prefix %q, got %q", tc.want[i], got[i])
			}
		})
	}
}

func TestCheckExamples(t *testing.T) {
	t.Parallel()
	corpus := &doccheck.Corpus{}
	corpus.Add("package balance_test\n\nfunc ExampleGuard_Charge() {\n}\n\nfunc Example_jsonRPC() {}\n")
	for _, tc := range []struct {
		name string
		md   string
		want []string
	}{
		{name: "declared", md: "From `ExampleGuard_Charge` and `Example_jsonRPC` of package `x`.\n"},
		{name: "missing", md: "intro\n\nSee `ExampleLimiter_Balance`.\n", want: []string{"README.md:3: ExampleLimiter_Balance: no Go file declares this Example function; name one that exists"}},
		{name: "in a code block", md: "```text\n`ExampleNope`\n```\n"},
		{name: "a bare Example", md: "The `Example` of package `balance`.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range corpus.CheckExamples("README.md", doccheck.Parse(tc.md)) {
				got = append(got, p.String())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAnchor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		heading string
		want    string
	}{
		{heading: "Quick start: Gin", want: "quick-start-gin"},
		{heading: "Behind proxies: NumProxies and W601", want: "behind-proxies-numproxies-and-w601"},
		{heading: "`maxmemory-policy`", want: "maxmemory-policy"},
		{heading: "The **guarantee**, in [ADR 0001](adr/0001.md)", want: "the-guarantee-in-adr-0001"},
		{heading: "core.Config", want: "coreconfig"},
		{heading: "snake_case and hyphen-case", want: "snake_case-and-hyphen-case"},
		{heading: "Status 429 / Retry-After", want: "status-429--retry-after"},
		{heading: "Über Grenzen", want: "über-grenzen"},
	} {
		assert.Equal(t, tc.want, doccheck.Anchor(tc.heading), tc.heading)
	}
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	page := doccheck.Parse("# Settings\n## Example\ntext\n## Example ##\n```sh\n# not a heading\n```\n####### seven\n")
	assert.Equal(t, map[string]bool{"settings": true, "example": true, "example-1": true}, doccheck.Anchors(page))
}

func TestCheckLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs", "howto"), 0o755))
	write := func(rel, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(text), 0o644))
	}
	write("docs/reference.md", "# Settings reference\n## core.Config\n")
	write("docs/howto/proxy.md", "# How to count API callers behind a proxy\n")
	page := doccheck.Parse(strings.Join([]string{
		"# Concepts", // 1
		"See [the reference](reference.md#coreconfig) and [a how-to](howto/proxy.md).", // 2
		"[Up](#concepts), [away](https://example.com/x#y), [mail](mailto:a@b.c).",      // 3
		"[gone](missing.md) and [bad anchor](reference.md#nope)",                       // 4
		"`[code](not-a-link.md)` and ![img](howto/proxy.md)",                           // 5
		"[self](#nowhere)",         // 6
		"[ref]: howto/absent.md",   // 7
		"```md",                    // 8
		"[inside code](absent.md)", // 9
		"```",                      // 10
		"[out](../../etc/passwd) [go file](../go.mod#x)", // 11
	}, "\n"))
	pageOf := func(rel string) (doccheck.Page, error) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return doccheck.Page{}, errors.New("unreadable")
		}
		return doccheck.Parse(string(b)), nil
	}
	var got []string
	for _, p := range doccheck.CheckLinks(root, "docs/concepts.md", page, pageOf) {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		`docs/concepts.md:4: link "missing.md": no file docs/missing.md`,
		`docs/concepts.md:4: link "reference.md#nope": docs/reference.md has no heading with anchor #nope`,
		`docs/concepts.md:6: link "#nowhere": docs/concepts.md has no heading with anchor #nowhere`,
		`docs/concepts.md:7: link "howto/absent.md": no file docs/howto/absent.md`,
		`docs/concepts.md:11: link "../../etc/passwd" leaves the repository`,
		`docs/concepts.md:11: link "../go.mod#x": no file go.mod`,
	}, got)
}

// TestReadmeQuickStartIsSafe checks that the README's Gin quick start, the
// shortest path, trusts only the user's proxies and runs the check that
// says when Gin and ratescope disagree (W612). Before issue 18 it used
// gin.Default() as it is, which trusts every proxy, and never checked.
func TestReadmeQuickStartIsSafe(t *testing.T) {
	t.Parallel()
	page, err := readPage(repoRoot(t))("README.md")
	require.NoError(t, err)
	var gin string
	for _, b := range page.Blocks {
		if text := strings.Join(b.Lines, "\n"); b.IsGo() && strings.Contains(text, "ginlimit.New(") {
			gin = text
			break
		}
	}
	require.NotEmpty(t, gin, "the README has a Gin quick start")
	assert.Contains(t, gin, "r.SetTrustedProxies(", "Gin trusts every proxy unless told")
	assert.Contains(t, gin, "TrustedProxies:", "the limiter trusts the same proxies")
	assert.Contains(t, gin, "ginlimit.CheckClientIP(r, lim)", "W612 is logged if they disagree")
}
