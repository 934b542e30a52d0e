package watch_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This package and package counters import the standard library alone
// (and this one counters), so that the metrics modules that read them
// (prometheus/, otel/) pull in no Redis client for an application that
// counts in memory.
func TestOnlyStandardImports(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "../../counters"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				if path == "github.com/ratescope/ratescope/counters" {
					continue
				}
				first, _, _ := strings.Cut(path, "/")
				assert.NotContains(t, first, ".", "%s imports %s, which is not in the standard library", name, path)
			}
		}
	}
}
