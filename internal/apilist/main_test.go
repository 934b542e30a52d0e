package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListing fails when the exported API differs from the committed
// listing: a change to the surface must come with the listing's diff, for
// review.
func TestListing(t *testing.T) {
	root := filepath.Join("..", "..")
	pkgs, err := load(root, false)
	require.NoError(t, err)
	got := string(listing(pkgs))
	want, err := os.ReadFile(filepath.Join(root, ListingFile))
	require.NoError(t, err, "no listing; write it with: %s", regenerate)
	if got == string(want) {
		return
	}
	gotLines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	var diff []string
	for _, l := range wantLines {
		if !slices.Contains(gotLines, l) {
			diff = append(diff, "- "+l)
		}
	}
	for _, l := range gotLines {
		if !slices.Contains(wantLines, l) {
			diff = append(diff, "+ "+l)
		}
	}
	t.Errorf("the exported API differs from %s (- listed, not in the code; + in the code, not listed):\n%s\n\nIf the change is meant, regenerate the listing from the repository root and commit it:\n\t%s",
		ListingFile, strings.Join(diff, "\n"), regenerate)
}

// TestLines checks the form of each kind of line on a package written for
// the test.
func TestLines(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "context"

const (
	A Kind = iota
	B
	c
)

const Name = "x"

var ErrX = errors.New("x")

type Kind uint8

type Store interface {
	Take(ctx context.Context, n int) (int, error)
	hidden()
}

type Config struct {
	Store Store
	Hook  func(ctx context.Context, n ...int) error
	inner int
	Embedded
}

type Embedded struct{}

type hidden struct{ Field int }

func (hidden) Method() {}

func New(c Config) (*Config, error) { return nil, nil }

func (c *Config) Run(ctx context.Context) {}

func helper() {}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc Exported() {}\n"), 0o644))
	lines, err := loadDir(dir, "example.com/p")
	require.NoError(t, err)
	want := []string{
		"const A Kind",
		"const B Kind",
		`const Name = "x"`,
		"func New(Config) (*Config, error)",
		"method (*Config) Run(context.Context)",
		"type Config struct",
		"type Config struct, Hook func(context.Context, ...int) error",
		"type Config struct, Store Store",
		"type Config struct, embedded Embedded",
		"type Embedded struct",
		"type Kind uint8",
		"type Store interface",
		"type Store interface, Take(context.Context, int) (int, error)",
		"var ErrX error",
	}
	for i := range want {
		want[i] = "pkg example.com/p, " + want[i]
	}
	assert.Equal(t, want, lines)
	p := pkg{lines: lines}
	names, members := p.count()
	assert.Equal(t, 10, names)
	assert.Equal(t, 4, members)
}
