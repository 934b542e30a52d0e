package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A Table is a Markdown pipe table of a page: a header row, a delimiter
// row of dashes, and its body rows.
type Table struct {
	// Heading is the text of the last heading above the table, or "".
	Heading string
	// Line is the line number of the header row, from 1.
	Line int
	// Header holds the header row's cells.
	Header []string
	// Rows are the body rows, in order.
	Rows []Row
}

// A Row is one body row of a [Table].
type Row struct {
	// Line is the row's line number, from 1.
	Line int
	// Cells are its cells, trimmed, as written (code spans keep their
	// backticks).
	Cells []string
}

var delimRe = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// Tables returns the pipe tables of the page's prose.
func Tables(page Page) []Table {
	var (
		out     []Table
		heading string
	)
	for i := 0; i < len(page.Prose); i++ {
		l := page.Prose[i]
		if m := headingRe.FindStringSubmatch(l); m != nil {
			heading = m[2]
			continue
		}
		if !strings.HasPrefix(strings.TrimSpace(l), "|") || i+1 >= len(page.Prose) || !delimRe.MatchString(page.Prose[i+1]) {
			continue
		}
		t := Table{Heading: heading, Line: i + 1, Header: cells(l)}
		for i += 2; i < len(page.Prose) && strings.HasPrefix(strings.TrimSpace(page.Prose[i]), "|"); i++ {
			t.Rows = append(t.Rows, Row{Line: i + 1, Cells: cells(page.Prose[i])})
		}
		out = append(out, t)
		i-- // the line that ended the table may be a heading
	}
	return out
}

// cells splits a table row into its trimmed cells: at every "|" that is
// neither escaped ("\|") nor inside a code span.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var (
		out  []string
		cur  strings.Builder
		code bool
	)
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// CheckTables returns a problem for each body row of a table of the page
// at path that repeats an earlier row of the same table: all its cells,
// or its first cell when that is a code span, the name of the row's
// subject (a setting, a flag, an id). A row written twice is one whose
// copies drift apart. A first cell of plain text may repeat: in a table
// keyed by two columns, or a "same, long" row under its case.
func CheckTables(path string, page Page) []Problem {
	var out []Problem
	for _, t := range Tables(page) {
		first, whole := map[string]int{}, map[string]int{}
		for _, r := range t.Rows {
			if at, ok := whole[strings.Join(r.Cells, "|")]; ok {
				out = append(out, Problem{path, r.Line, fmt.Sprintf("table row repeats line %d", at)})
				continue
			}
			whole[strings.Join(r.Cells, "|")] = r.Line
			c := r.Cells[0]
			if !isCodeSpan(c) {
				continue
			}
			if at, ok := first[c]; ok {
				out = append(out, Problem{path, r.Line, fmt.Sprintf("table row %s repeats the first cell of line %d", c, at)})
				continue
			}
			first[c] = r.Line
		}
	}
	return out
}

// isCodeSpan reports whether cell is one code span and nothing else.
func isCodeSpan(cell string) bool {
	return len(cell) >= 2 && cell[0] == '`' && cell[len(cell)-1] == '`' && !strings.Contains(cell[1:len(cell)-1], "`")
}

// Fields returns the names of the exported fields of the struct type name
// declared in the Go files of dir (test files left out), in order.
func Fields(dir, name string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if ts.Name.Name != name || !ok {
					continue
				}
				var names []string
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						if n.IsExported() {
							names = append(names, n.Name)
						}
					}
				}
				return names, nil
			}
		}
	}
	return nil, fmt.Errorf("doccheck: no struct type %s in %s", name, dir)
}

// CheckFieldTable returns a problem unless the page at path has a table
// under the heading heading whose first column names, as code spans,
// every field of fields exactly once and nothing else: the table of a
// config struct, with a row per field.
func CheckFieldTable(path string, page Page, heading string, fields []string) []Problem {
	for _, t := range Tables(page) {
		if t.Heading != heading {
			continue
		}
		var out []Problem
		rows := map[string]int{}
		for _, r := range t.Rows {
			name := strings.Trim(r.Cells[0], "`")
			if _, ok := rows[name]; ok {
				out = append(out, Problem{path, r.Line, fmt.Sprintf("table under %q: a second row for %s", heading, name)})
			}
			rows[name]++
		}
		want := map[string]bool{}
		for _, f := range fields {
			want[f] = true
			if rows[f] == 0 {
				out = append(out, Problem{path, t.Line, fmt.Sprintf("table under %q: no row for the field %s", heading, f)})
			}
		}
		for _, r := range t.Rows {
			if name := strings.Trim(r.Cells[0], "`"); !want[name] {
				out = append(out, Problem{path, r.Line, fmt.Sprintf("table under %q: a row for %s, which is no field", heading, name)})
			}
		}
		return out
	}
	return []Problem{{path, 1, fmt.Sprintf("no table under the heading %q", heading)}}
}
