// Package consumertest checks that a stranger can get ratescope's modules:
// [WriteProxy] writes the modules of the working tree, at a version, as a
// module proxy in the layout GOPROXY=file://DIR reads, and the package's
// test gets them from it into a fresh module outside the repository, then
// builds and runs the README's quick starts against them.
//
// It is a module of its own (it needs golang.org/x/mod/zip, which no user
// of ratescope should download) and is not published: nothing imports it,
// and it imports no ratescope package.
package consumertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// A Module is a published module of the repository.
type Module struct {
	// Path is the module path, as its go.mod declares it.
	Path string
	// Dir is its directory, relative to the repository root, "." for the
	// root module.
	Dir string
}

// Modules are the modules a user can get: the root module (core, the
// stores, the middleware for Gin, Echo v4 and Echo v5), the Prometheus
// collector and the OpenTelemetry recorder.
var Modules = []Module{
	{Path: "github.com/ratescope/ratescope", Dir: "."},
	{Path: "github.com/ratescope/ratescope/prometheus", Dir: "prometheus"},
	{Path: "github.com/ratescope/ratescope/otel", Dir: "otel"},
}

// WriteProxy writes every module of modules, as the files of the working
// tree of the Git repository at repo show it (tracked files and untracked
// ones Git does not ignore), at version into dir, in the layout of the
// GOPROXY protocol: MODULE/@v/list, and MODULE/@v/VERSION.info, .mod and
// .zip, the module path escaped as the protocol says. The zip follows the
// rules of golang.org/x/mod/zip, which leave out nested modules, so the
// root module's zip holds no file of prometheus/ or benchmarks/.
func WriteProxy(dir, repo, version string, modules []Module) error {
	files, err := workingTree(repo)
	if err != nil {
		return err
	}
	for _, m := range modules {
		if err := writeModule(dir, repo, files, module.Version{Path: m.Path, Version: version}, m.Dir); err != nil {
			return fmt.Errorf("consumertest: %s: %w", m.Path, err)
		}
	}
	return nil
}

// workingTree returns the files of the working tree, relative to repo and
// slash-separated: tracked ones that still exist, and untracked ones that
// .gitignore does not name.
func workingTree(repo string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("consumertest: git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(f))); err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

func writeModule(dir, repo string, files []string, mv module.Version, modDir string) error {
	prefix := ""
	if modDir != "." {
		prefix = path.Clean(modDir) + "/"
	}
	var zfiles []zip.File
	for _, f := range files {
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		zfiles = append(zfiles, file{rel: strings.TrimPrefix(f, prefix), abs: filepath.Join(repo, filepath.FromSlash(f))})
	}
	esc, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(vdir, mv.Version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.Create(z, mv, zfiles); err != nil {
		z.Close()
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(modDir), "go.mod"))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{mv.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	return errors.Join(
		os.WriteFile(filepath.Join(vdir, mv.Version+".mod"), gomod, 0o644),
		os.WriteFile(filepath.Join(vdir, mv.Version+".info"), info, 0o644),
		os.WriteFile(filepath.Join(vdir, "list"), []byte(mv.Version+"\n"), 0o644),
	)
}

// file is a file of the working tree, as zip.Create reads it.
type file struct{ rel, abs string }

func (f file) Path() string                 { return f.rel }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
