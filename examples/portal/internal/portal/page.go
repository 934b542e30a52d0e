package portal

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// page holds the search page: its HTML template and the script that the
// page carries inline, so that it needs nothing but the portal.
//
//go:embed page/index.html page/search.js
var page embed.FS

// PagePath is the path of the page with the search boxes.
const PagePath = "/"

// buildPage renders the page from the embedded files, once per handler.
func buildPage() ([]byte, error) {
	src, err := page.ReadFile("page/index.html")
	if err != nil {
		return nil, err
	}
	script, err := page.ReadFile("page/search.js")
	if err != nil {
		return nil, err
	}
	t, err := template.New("index.html").Parse(string(src))
	if err != nil {
		return nil, err
	}
	type box struct{ Name, Label string }
	data := struct {
		Boxes  []box
		Script template.JS
	}{Script: template.JS(script)} // the portal's own file, not input
	for _, name := range SearchBoxes() {
		data.Boxes = append(data.Boxes, box{Name: name, Label: boxLabel(name)})
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// boxLabel is the label of the search box name: "ROR" for ror, else the
// name with a capital.
func boxLabel(name string) string {
	if name == "ror" {
		return "ROR"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// WithPage returns a handler that serves the search page ([NewPage]) at
// [PagePath] and passes every other path to next, the portal on its
// framework: the page is the same on every framework, and a framework
// added to the portal has it without a line of its own. The error is
// NewPage's.
func WithPage(next http.Handler) (http.Handler, error) {
	page, err := NewPage()
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == PagePath {
			page.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}

// NewPage returns the handler of GET / ([PagePath]): an HTML page with the
// nine search boxes of [SearchBoxes]. Its script, inline, asks
// /autocomplete/NAME?q= as the user types and shows the results; answered
// 429, the box shows the wait that Retry-After asks for, sends nothing
// until it has passed, then asks again. The page loads nothing else, and
// is not limited: a search is counted when it is asked, not when the page
// is shown. It answers any other method than GET and HEAD with 405.
//
// The page is rendered once, here; the error is that of rendering the
// embedded files, which the package's tests make sure never happens.
func NewPage() (http.Handler, error) {
	b, err := buildPage()
	if err != nil {
		return nil, fmt.Errorf("portal: the search page: %w", err)
	}
	return pageHandler(b), nil
}

// pageHandler serves the rendered page.
type pageHandler []byte

// ServeHTTP serves the page to GET and HEAD.
func (p pageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(p)))
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(p)
	}
}
