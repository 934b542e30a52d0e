// Command apilist writes the exported API of every public package of
// ratescope, one identifier a line, in the manner of the Go project's api/
// files:
//
//	pkg github.com/ratescope/ratescope/core, func New(Config) (*Limiter, error)
//	pkg github.com/ratescope/ratescope/core, method (*Limiter) Guard(string, int64) (*Guard, error)
//	pkg github.com/ratescope/ratescope/core, type Config struct, Store Store
//
// Each line is one exported name: a constant, variable, function, type, a
// method of an exported type, an exported field of an exported struct or a
// method of an exported interface. The listing is read from the source with
// go/parser alone (exported API is syntactic), so it covers the nested
// modules (prometheus, otel) from the root without loading them, and needs no
// dependency.
//
// The public packages are those of the root module and of the nested
// prometheus and otel modules, but for internal/, examples/, benchmarks/ (a
// comparison harness, not API) and package main.
//
// Usage, from the root of the repository:
//
//	go run ./internal/apilist            # print the listing
//	go run ./internal/apilist -w         # rewrite api/v0.1.0.txt
//	go run ./internal/apilist -count     # exported names per package:
//	                                     # top-level names and methods, and
//	                                     # fields and interface methods
//	go run ./internal/apilist -count -all  # internal packages included
//
// The test of this package (part of go test ./... and make test) fails
// when the committed listing differs from the code, printing the diff and
// the command that regenerates it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ListingFile is the committed listing, relative to the repository root.
const ListingFile = "api/v0.1.0.txt"

// regenerate is the command that rewrites the listing.
const regenerate = "go run ./internal/apilist -w"

func main() {
	root := flag.String("root", ".", "the root of the repository")
	write := flag.Bool("w", false, "write the listing to "+ListingFile+" instead of standard output")
	count := flag.Bool("count", false, "print the number of exported names per package instead of the listing")
	all := flag.Bool("all", false, "with -count, include internal/ and examples/ packages")
	flag.Parse()
	pkgs, err := load(*root, *all)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(1)
	}
	switch {
	case *count:
		var names, members int
		fmt.Printf("%-50s %5s %7s\n", "package", "names", "members")
		for _, p := range pkgs {
			n, m := p.count()
			fmt.Printf("%-50s %5d %7d\n", p.path, n, m)
			names, members = names+n, members+m
		}
		fmt.Printf("%-50s %5d %7d\n", "total", names, members)
	case *write:
		if err := os.WriteFile(filepath.Join(*root, ListingFile), listing(pkgs), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "apilist:", err)
			os.Exit(1)
		}
	default:
		os.Stdout.Write(listing(pkgs))
	}
}

// pkg is the exported API of one package.
type pkg struct {
	path  string   // import path
	lines []string // sorted, one exported name each
}

// count returns the number of exported names of p: top-level names and
// methods (names), and fields of structs and methods of interfaces
// (members).
func (p pkg) count() (names, members int) {
	for _, l := range p.lines {
		if strings.Contains(l, " struct, ") || strings.Contains(l, " interface, ") {
			members++
		} else {
			names++
		}
	}
	return names, members
}

// listing returns the text of the listing of pkgs.
func listing(pkgs []pkg) []byte {
	var b bytes.Buffer
	for _, p := range pkgs {
		for _, l := range p.lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// load reads the public packages under root (with all, the internal and
// example ones too), sorted by import path.
func load(root string, all bool) ([]pkg, error) {
	var pkgs []pkg
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		if rel == "benchmarks" || (!all && (name == "internal" || rel == "examples")) {
			return filepath.SkipDir
		}
		ip, err := importPath(root, rel)
		if err != nil {
			return err
		}
		lines, err := loadDir(p, ip)
		if err != nil {
			return err
		}
		if lines != nil {
			pkgs = append(pkgs, pkg{path: ip, lines: lines})
		}
		return nil
	})
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.path, b.path) })
	return pkgs, err
}

// importPath returns the import path of the directory rel under root, from
// the nearest go.mod at or above it.
func importPath(root, rel string) (string, error) {
	for dir := rel; ; dir = path.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), "go.mod"))
		if err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				if mod, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					sub := strings.TrimPrefix(strings.TrimPrefix(rel, dir), "/")
					return strings.TrimSuffix(path.Join(strings.TrimSpace(mod), sub), "/"), nil
				}
			}
			return "", fmt.Errorf("%s/go.mod: no module line", dir)
		}
		if dir == "." {
			return "", fmt.Errorf("no go.mod at or above %s", rel)
		}
	}
}

// loadDir returns the listing lines of the package in dir, or nil if it
// has no Go files but tests or is a command.
func loadDir(dir, importPath string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if f.Name.Name == "main" {
			return nil, nil
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, nil
	}
	w := &writer{fset: fset, prefix: "pkg " + importPath + ", ", seen: map[string]bool{}}
	for _, f := range files {
		for _, d := range f.Decls {
			w.decl(d)
		}
	}
	slices.Sort(w.lines)
	if w.lines == nil {
		w.lines = []string{}
	}
	return w.lines, nil
}

// writer collects the lines of one package.
type writer struct {
	fset   *token.FileSet
	prefix string
	seen   map[string]bool // lines already written (files built for other systems repeat names)
	lines  []string
}

func (w *writer) add(s string) {
	if !w.seen[s] {
		w.seen[s] = true
		w.lines = append(w.lines, w.prefix+s)
	}
}

func (w *writer) decl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		if d.Recv == nil {
			w.add("func " + d.Name.Name + w.typeParams(d.Type.TypeParams) + w.signature(d.Type))
			return
		}
		recv := d.Recv.List[0].Type
		base := recv
		if s, ok := base.(*ast.StarExpr); ok {
			base = s.X
		}
		switch b := base.(type) {
		case *ast.IndexExpr:
			base = b.X
		case *ast.IndexListExpr:
			base = b.X
		}
		if id, ok := base.(*ast.Ident); ok && id.IsExported() {
			w.add("method (" + w.expr(recv) + ") " + d.Name.Name + w.signature(d.Type))
		}
	case *ast.GenDecl:
		switch d.Tok {
		case token.TYPE:
			for _, s := range d.Specs {
				w.typeSpec(s.(*ast.TypeSpec))
			}
		case token.CONST:
			var typ ast.Expr
			var vals []ast.Expr
			for _, s := range d.Specs {
				vs := s.(*ast.ValueSpec)
				if vs.Type != nil || vs.Values != nil {
					typ, vals = vs.Type, vs.Values // else repeat the previous (iota)
				}
				for i, n := range vs.Names {
					if !n.IsExported() {
						continue
					}
					line := "const " + n.Name
					if typ != nil {
						line += " " + w.expr(typ)
					}
					if vs.Values != nil && i < len(vals) {
						if lit, ok := vals[i].(*ast.BasicLit); ok {
							line += " = " + lit.Value
						}
					}
					w.add(line)
				}
			}
		case token.VAR:
			for _, s := range d.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() {
						continue
					}
					line := "var " + n.Name
					if vs.Type != nil {
						line += " " + w.expr(vs.Type)
					} else if i < len(vs.Values) {
						line += " " + w.valueType(vs.Values[i])
					}
					w.add(strings.TrimSpace(line))
				}
			}
		}
	}
}

// valueType guesses the type of a variable's initial value, for a var
// declared without one: a composite literal's type, an error from
// errors.New or fmt.Errorf, or the address of either.
func (w *writer) valueType(v ast.Expr) string {
	switch v := v.(type) {
	case *ast.CompositeLit:
		return w.expr(v.Type)
	case *ast.UnaryExpr:
		if v.Op == token.AND {
			return "*" + w.valueType(v.X)
		}
	case *ast.CallExpr:
		if f := w.expr(v.Fun); f == "errors.New" || f == "fmt.Errorf" {
			return "error"
		}
	}
	return ""
}

func (w *writer) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name + w.typeParams(s.TypeParams)
	if s.Assign.IsValid() {
		w.add("type " + name + " = " + w.expr(s.Type))
		return
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		w.add("type " + name + " struct")
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				if embeddedName(f.Type).IsExported() {
					w.add("type " + name + " struct, embedded " + w.expr(f.Type))
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					w.add("type " + name + " struct, " + n.Name + " " + w.expr(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		w.add("type " + name + " interface")
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				w.add("type " + name + " interface, embedded " + w.expr(m.Type))
				continue
			}
			for _, n := range m.Names {
				if n.IsExported() {
					w.add("type " + name + " interface, " + n.Name + w.signature(m.Type.(*ast.FuncType)))
				}
			}
		}
	default:
		w.add("type " + name + " " + w.expr(s.Type))
	}
}

// embeddedName returns the name of an embedded field's type.
func embeddedName(e ast.Expr) *ast.Ident {
	switch e := e.(type) {
	case *ast.Ident:
		return e
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel
	case *ast.IndexExpr:
		return embeddedName(e.X)
	case *ast.IndexListExpr:
		return embeddedName(e.X)
	}
	return ast.NewIdent("_")
}

func (w *writer) typeParams(l *ast.FieldList) string {
	if l == nil || len(l.List) == 0 {
		return ""
	}
	var parts []string
	for _, f := range l.List {
		for _, n := range f.Names {
			parts = append(parts, n.Name+" "+w.expr(f.Type))
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// signature writes a function type's parameters and results, types only.
func (w *writer) signature(t *ast.FuncType) string {
	s := "(" + w.fields(t.Params) + ")"
	if t.Results == nil || len(t.Results.List) == 0 {
		return s
	}
	r := w.fields(t.Results)
	if len(t.Results.List) == 1 && len(t.Results.List[0].Names) <= 1 {
		return s + " " + r
	}
	return s + " (" + r + ")"
}

// fields writes the types of a parameter list, one per parameter.
func (w *writer) fields(l *ast.FieldList) string {
	if l == nil {
		return ""
	}
	var parts []string
	for _, f := range l.List {
		t := w.expr(f.Type)
		for range max(1, len(f.Names)) {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, ", ")
}

// expr writes a type expression, function types without parameter names.
func (w *writer) expr(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return w.expr(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + w.expr(e.X)
	case *ast.Ellipsis:
		return "..." + w.expr(e.Elt)
	case *ast.ArrayType:
		if e.Len == nil {
			return "[]" + w.expr(e.Elt)
		}
		return "[" + w.expr(e.Len) + "]" + w.expr(e.Elt)
	case *ast.MapType:
		return "map[" + w.expr(e.Key) + "]" + w.expr(e.Value)
	case *ast.ChanType:
		switch e.Dir {
		case ast.SEND:
			return "chan<- " + w.expr(e.Value)
		case ast.RECV:
			return "<-chan " + w.expr(e.Value)
		}
		return "chan " + w.expr(e.Value)
	case *ast.FuncType:
		return "func" + w.signature(e)
	case *ast.IndexExpr:
		return w.expr(e.X) + "[" + w.expr(e.Index) + "]"
	case *ast.IndexListExpr:
		parts := make([]string, len(e.Indices))
		for i, x := range e.Indices {
			parts[i] = w.expr(x)
		}
		return w.expr(e.X) + "[" + strings.Join(parts, ", ") + "]"
	case *ast.ParenExpr:
		return "(" + w.expr(e.X) + ")"
	}
	var b bytes.Buffer
	printer.Fprint(&b, w.fset, e)
	return strings.Join(strings.Fields(b.String()), " ")
}
