// Package doccheck checks the Markdown documentation of the repository: that
// every Go snippet is a copy of code that compiles, and that every relative
// link and anchor resolves. Its test runs both checks on README.md and
// docs/**/*.md, so `make test` fails when a page drifts from the code.
//
// # Snippets
//
// A fenced block whose info string starts with "go" is a Go snippet. Its
// lines, with leading and trailing space removed, runs of spaces and tabs
// collapsed to one space and blank lines dropped, must appear as consecutive
// lines, normalised the same way, in a .go file of the repository: an
// Example function, a program under examples/ or another file that the
// build or the tests compile. Blocks with any other info string (sh, text,
// yaml, nginx, mermaid) are not Go and are not checked.
//
// There is no way to opt out: a snippet that cannot be a copy of compiled
// code is written as an Example function first and quoted from there.
//
// A block whose info string is "text output" shows what an example prints.
// Its lines, normalised the same way, must appear as consecutive comment
// lines of a .go file, with the "//" removed: normally the "// Output:"
// comment of an Example, which go test checks against what it prints. So a
// figure quoted from an example cannot go stale either.
//
// # Examples
//
// An Example function named in code quotes in the prose (`ExampleGuard_Charge`,
// `Example_jsonRPC`) must be declared by some .go file of the repository,
// so that a page never sends its reader to an example that was renamed or
// never existed.
//
// # Links
//
// Every inline link [text](target) and reference definition [name]: target
// outside code is checked, unless the target is an absolute URL (http:,
// https:, mailto:), which is never fetched. A relative target must name a
// file or directory, relative to the page; a #fragment, on the page itself
// or on another Markdown file, must name one of its headings, under GitHub's
// rules for anchors (see [Anchor]).
//
// # Tables
//
// No row of a pipe table repeats an earlier row of the same table, nor
// its first cell when that cell is a code span, the name of the row's
// subject ([CheckTables]). The table of a config struct has one row per
// field and none else ([CheckFieldTable], with [Fields] read from the
// source).
package doccheck

import (
	"bufio"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A Problem is one finding, at a line of a Markdown file.
type Problem struct {
	// File is the Markdown file's path, relative to the repository root.
	File string
	// Line is the line number, from 1.
	Line int
	// Text says what is wrong.
	Text string
}

// String returns the problem as FILE:LINE: TEXT, the form editors jump to.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Text)
}

// A Block is a fenced code block of a Markdown file.
type Block struct {
	// Info is the info string after the opening fence, such as "go".
	Info string
	// Start is the line number of the first line inside the fence.
	Start int
	// Lines are the lines inside the fence, as written.
	Lines []string
}

// IsGo reports whether the block is a Go snippet that must be checked.
func (b Block) IsGo() bool {
	f := strings.Fields(b.Info)
	return len(f) > 0 && f[0] == "go"
}

// IsOutput reports whether the block shows an example's output ("text
// output") that must be checked.
func (b Block) IsOutput() bool {
	f := strings.Fields(b.Info)
	return len(f) > 1 && f[0] == "text" && f[1] == "output"
}

// A Page is a parsed Markdown file: its fenced blocks and, for every other
// line, the text outside code.
type Page struct {
	// Blocks are the fenced code blocks, in order.
	Blocks []Block
	// Prose holds, for each line of the file (index = line - 1), its text,
	// or "" for a line inside or opening or closing a fence.
	Prose []string
}

var fenceRe = regexp.MustCompile("^\\s*(```+|~~~+)\\s*(.*)$")

// Parse splits Markdown text into fenced blocks and prose.
func Parse(text string) Page {
	var p Page
	var open string // the fence of the open block, or ""
	var cur *Block
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		n++
		if open == "" {
			if m := fenceRe.FindStringSubmatch(line); m != nil {
				open = m[1]
				cur = &Block{Info: strings.TrimSpace(m[2]), Start: n + 1}
				p.Prose = append(p.Prose, "")
				continue
			}
			p.Prose = append(p.Prose, line)
			continue
		}
		p.Prose = append(p.Prose, "")
		if t := strings.TrimSpace(line); strings.HasPrefix(t, open) && strings.Trim(t, open[:1]) == "" {
			p.Blocks = append(p.Blocks, *cur)
			open, cur = "", nil
			continue
		}
		cur.Lines = append(cur.Lines, line)
	}
	if cur != nil { // an unclosed fence runs to the end of the file
		p.Blocks = append(p.Blocks, *cur)
	}
	return p
}

// normalise returns line with its ends trimmed and inner runs of blanks
// collapsed to one space.
func normalise(line string) string {
	return strings.Join(strings.Fields(line), " ")
}

// A Corpus is the Go code snippets are matched against: every .go file,
// normalised.
type Corpus struct {
	files    []string        // "\n" + normalised lines joined by "\n" + "\n"
	comments []string        // the same with "//" removed from comment lines, and code lines blanked
	examples map[string]bool // the names of the Example functions declared
}

// LoadCorpus reads every .go file under root, skipping hidden directories,
// directories named testdata and the directories in skip (relative to
// root, such as this package's own, whose tests hold snippets that must not
// count as code).
func LoadCorpus(root string, skip ...string) (*Corpus, error) {
	c := &Corpus{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if rel, err := filepath.Rel(root, path); err == nil && slices.Contains(skip, filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		c.Add(string(b))
		return nil
	})
	return c, err
}

// Add adds the text of one Go file to the corpus.
func (c *Corpus) Add(src string) {
	var lines, comments []string
	for l := range strings.SplitSeq(src, "\n") {
		n := normalise(l)
		if n == "" {
			continue
		}
		lines = append(lines, n)
		if m := exampleFuncRe.FindStringSubmatch(n); m != nil {
			if c.examples == nil {
				c.examples = map[string]bool{}
			}
			c.examples[m[1]] = true
		}
		if text, ok := strings.CutPrefix(n, "//"); ok {
			comments = append(comments, normalise(text))
		} else {
			comments = append(comments, "\x00") // code ends a run of comments
		}
	}
	c.files = append(c.files, "\n"+strings.Join(lines, "\n")+"\n")
	c.comments = append(c.comments, "\n"+strings.Join(comments, "\n")+"\n")
}

var (
	exampleFuncRe  = regexp.MustCompile(`^func (Example\w*)\(`)
	citedExampleRe = regexp.MustCompile("`(Example[A-Za-z0-9_]+)`")
)

// CheckExamples returns a problem for each Example function that the
// prose of page names in code quotes and no Go file of the corpus
// declares.
func (c *Corpus) CheckExamples(file string, page Page) []Problem {
	var out []Problem
	for i, l := range page.Prose {
		for _, m := range citedExampleRe.FindAllStringSubmatch(l, -1) {
			if !c.examples[m[1]] {
				out = append(out, Problem{file, i + 1, fmt.Sprintf("%s: no Go file declares this Example function; name one that exists", m[1])})
			}
		}
	}
	return out
}

// elision is the line that stands, in a Go snippet, for code left out.
const elision = "..."

// contains reports whether one of files holds lines, one after the other;
// an [elision] line among them matches any run of lines, so the parts
// between elisions must appear in that order in the same file.
func contains(files, lines []string) bool {
	var parts []string
	part := []string{}
	for _, l := range lines {
		if l == elision {
			if len(part) > 0 {
				parts = append(parts, "\n"+strings.Join(part, "\n")+"\n")
			}
			part = part[:0]
			continue
		}
		part = append(part, l)
	}
	if len(part) > 0 {
		parts = append(parts, "\n"+strings.Join(part, "\n")+"\n")
	}
	if len(parts) == 0 {
		return false
	}
	for _, f := range files {
		rest, ok := f, true
		for _, want := range parts {
			i := strings.Index(rest, want)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(want)-1:] // keep the newline: the next part starts a line
		}
		if ok {
			return true
		}
	}
	return false
}

// CheckSnippets returns a problem for each Go block of page (file names the
// page in messages) that does not appear in the corpus, and for each output
// block that does not appear in its comments, naming the first of its lines
// that breaks the match: the longest run of its first lines that some Go
// file holds ends just before it.
func (c *Corpus) CheckSnippets(file string, page Page) []Problem {
	var out []Problem
	for _, b := range page.Blocks {
		files, what := c.files, "Go snippet"
		switch {
		case b.IsGo():
		case b.IsOutput():
			files, what = c.comments, "output"
		default:
			continue
		}
		var lines []string
		var at []int
		for i, l := range b.Lines {
			if n := normalise(l); n != "" {
				lines = append(lines, n)
				at = append(at, b.Start+i)
			}
		}
		if len(lines) == 0 {
			out = append(out, Problem{file, b.Start, "empty " + what})
			continue
		}
		if contains(files, lines) {
			continue
		}
		k := 1
		for k < len(lines) && contains(files, lines[:k]) {
			k++
		}
		hint := "quote an Example function or a file under examples/ exactly"
		if b.IsOutput() {
			hint = "quote the // Output: comment of an Example exactly"
		}
		out = append(out, Problem{file, at[k-1], fmt.Sprintf(
			"%s (from line %d) matches no Go file of the repository; first unmatched line: %q (%s)",
			what, b.Start, strings.TrimSpace(b.Lines[at[k-1]-b.Start]), hint)})
	}
	return out
}

// Anchor returns the anchor GitHub gives a heading: the heading's text
// (inline code, emphasis and link syntax removed) in lower case, with
// spaces turned into '-' and every character that is not a letter, a
// digit, '-' or '_' dropped.
func Anchor(heading string) string {
	s := linkRe.ReplaceAllString(heading, "$1")
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var headingRe = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)

// Anchors returns the set of anchors of the page's headings. A heading
// whose anchor repeats an earlier one gets "-1", "-2" and so on, as on
// GitHub.
func Anchors(page Page) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, l := range page.Prose {
		m := headingRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := Anchor(m[2])
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		set[a] = true
	}
	return set
}

var (
	codeSpanRe = regexp.MustCompile("`[^`]*`")
	linkRe     = regexp.MustCompile(`!?\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRe   = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
)

// Links returns the link targets of the page's prose, with their lines.
func Links(page Page) (targets []string, lines []int) {
	for i, l := range page.Prose {
		l = codeSpanRe.ReplaceAllString(l, "")
		if m := refDefRe.FindStringSubmatch(l); m != nil {
			targets, lines = append(targets, m[1]), append(lines, i+1)
			continue
		}
		for _, m := range linkRe.FindAllStringSubmatch(l, -1) {
			targets, lines = append(targets, m[2]), append(lines, i+1)
		}
	}
	return targets, lines
}

// CheckLinks returns a problem for each relative link of the page at path
// (relative to root) whose file does not exist, or whose #fragment names no
// heading. pageOf parses another Markdown file, given its path relative to
// root.
func CheckLinks(root, path string, page Page, pageOf func(string) (Page, error)) []Problem {
	var out []Problem
	targets, lines := Links(page)
	for i, t := range targets {
		if t == "" {
			out = append(out, Problem{path, lines[i], "empty link target"})
			continue
		}
		if u, err := url.Parse(t); err == nil && u.Scheme != "" {
			continue // an absolute URL: not fetched
		}
		target, frag, _ := strings.Cut(t, "#")
		dest := path
		if target != "" {
			p, err := url.PathUnescape(target)
			if err != nil {
				out = append(out, Problem{path, lines[i], fmt.Sprintf("link %q: %v", t, err)})
				continue
			}
			if strings.HasPrefix(p, "/") {
				out = append(out, Problem{path, lines[i], fmt.Sprintf("link %q: use a path relative to the page", t)})
				continue
			}
			dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(path), p)))
			if strings.HasPrefix(dest, "../") || dest == ".." {
				out = append(out, Problem{path, lines[i], fmt.Sprintf("link %q leaves the repository", t)})
				continue
			}
			if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
				out = append(out, Problem{path, lines[i], fmt.Sprintf("link %q: no file %s", t, dest)})
				continue
			}
		}
		if frag == "" {
			continue
		}
		if !strings.HasSuffix(dest, ".md") {
			out = append(out, Problem{path, lines[i], fmt.Sprintf("link %q: an anchor on a file that is not Markdown", t)})
			continue
		}
		other := page
		if dest != path {
			p, err := pageOf(dest)
			if err != nil {
				out = append(out, Problem{path, lines[i], fmt.Sprintf("link %q: %v", t, err)})
				continue
			}
			other = p
		}
		if !Anchors(other)[frag] {
			out = append(out, Problem{path, lines[i], fmt.Sprintf("link %q: %s has no heading with anchor #%s", t, dest, frag)})
		}
	}
	return out
}

// Pages returns the Markdown files the checks cover, relative to root:
// README.md and every .md file under docs/, sorted.
func Pages(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}
