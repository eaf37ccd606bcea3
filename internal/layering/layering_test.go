package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is the module path; rules name packages relative to it.
const module = "github.com/mightyetl/leasefence"

// pkg is one package of the module as go list reports it, with import
// paths made relative to the module and only the module's own kept.
type pkg struct {
	Path    string   // "goclient", "cmd/leasectl", ...
	Imports []string // imports of its non-test files
	Tests   []string // imports of its _test.go files (internal and external)
}

// may lists, for the library rooms, every package of the module their
// non-test code may import. A package not listed is not limited by it; the
// rules of forbidden below hold for every package.
var may = map[string][]string{
	"sql":                  {},
	"goclient":             {},
	"goclient/prommetrics": {"goclient"},
	"controls":             {},
	"internal/textfmt":     {"textfmt"},
	"textfmt":              {},
	"audit":                {"controls", "sql"},
	"evidence":             {"audit", "controls", "goclient", "sql", "textfmt"},
	"internal/demo":        {"audit", "goclient", "internal/pglocal", "internal/textfmt", "sql"},
}

// testOnly are the packages that only tests (and other test-only packages)
// may import: they start databases and fail tests.
var testOnly = []string{"internal/testdb", "internal/demo/demotest"}

// notPublic are the rooms whose packages a program outside the module does
// not import: commands, the example worker module, the benchmarks and the
// coverage gate script (tools; the benchmarks share internal/pglocal with
// the tests). Everything else, bar the internal packages and testOnly, is
// public: part of what a user of the module imports.
var notPublic = []string{"cmd", "examples", "bench", "scripts"}

// public says whether the package at path (relative to the module) is one
// a program outside the module may import and so one that must import
// nothing internal.
func public(path string) bool {
	if internal(path) || slices.Contains(testOnly, path) {
		return false
	}
	room, _, _ := strings.Cut(path, "/")
	return !slices.Contains(notPublic, room)
}

// internal says whether path has an element named internal, which is what
// makes a package internal to the go tool.
func internal(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "internal")
}

// violations returns one line for each import the rules do not allow:
//
//   - a public package imports an internal one (its tests may);
//   - a library room (may) imports a package of the module not on its list;
//   - anything imports cmd/... (commands are never libraries);
//   - anything but cmd/leasectl imports internal/demo;
//   - non-test code imports a test-only package, unless it is one itself.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		allowed, limited := may[p.Path]
		for _, imp := range p.Imports {
			if public(p.Path) && internal(imp) {
				out = append(out, fmt.Sprintf("%s imports %s: a public package imports nothing internal", p.Path, imp))
			}
			if limited && !slices.Contains(allowed, imp) {
				out = append(out, fmt.Sprintf("%s imports %s: it may import only %v", p.Path, imp, allowed))
			}
			if slices.Contains(testOnly, imp) && !slices.Contains(testOnly, p.Path) {
				out = append(out, fmt.Sprintf("%s imports %s, which only tests may import", p.Path, imp))
			}
		}
		for _, imp := range append(slices.Clone(p.Imports), p.Tests...) {
			if strings.HasPrefix(imp, "cmd/") {
				out = append(out, fmt.Sprintf("%s imports %s: no package imports a command", p.Path, imp))
			}
			if imp == "internal/demo" && p.Path != "cmd/leasectl" {
				out = append(out, fmt.Sprintf("%s imports internal/demo: only cmd/leasectl may", p.Path))
			}
		}
	}
	return out
}

// modulePackages lists the module's packages with go list.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...").Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("go list: %v\n%s", err, exitErr.Stderr)
	}
	require.NoError(t, err)
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		own := func(paths ...[]string) []string {
			var rel []string
			for _, path := range slices.Concat(paths...) {
				if r, ok := strings.CutPrefix(path, module+"/"); ok && r != strings.TrimPrefix(p.ImportPath, module+"/") {
					rel = append(rel, r)
				} else if path == module {
					rel = append(rel, ".")
				}
			}
			return rel
		}
		pkgs = append(pkgs, pkg{Path: strings.TrimPrefix(p.ImportPath, module+"/"), Imports: own(p.Imports),
			Tests: own(p.TestImports, p.XTestImports)})
	}
	return pkgs
}

func TestEveryImportIsOneTheLayoutAllows(t *testing.T) {
	t.Parallel()
	pkgs := modulePackages(t)
	var paths []string
	for _, p := range pkgs {
		paths = append(paths, p.Path)
	}
	// Every room the rules name exists: a rule about a package that is
	// gone (renamed, moved) checks nothing.
	for room := range may {
		require.Contains(t, paths, room)
	}
	for _, room := range append(testOnly, "cmd/leasectl") {
		require.Contains(t, paths, room)
	}
	// The public rule covers the packages a user imports, and only those.
	for _, room := range []string{"sql", "goclient", "goclient/prommetrics", "controls", "audit", "evidence"} {
		require.True(t, public(room), room)
	}
	for _, room := range append(testOnly, "cmd/leasectl", "internal/demo", "internal/controls", "examples/etlworker",
		"bench", "bench/cmd/leasebench", "scripts/covergate", "goclient/internal/x") {
		require.False(t, public(room), room)
	}
	require.Empty(t, violations(pkgs), "imports the layout does not allow (README, Layout)")
}

func TestViolationsNamesEachForbiddenImport(t *testing.T) {
	t.Parallel()
	got := violations([]pkg{
		{Path: "goclient", Imports: []string{"audit"}},
		{Path: "goclient/prommetrics", Imports: []string{"goclient", "internal/textfmt"}},
		{Path: "evidence", Imports: []string{"audit", "goclient"}, Tests: []string{"cmd/leasectl"}},
		{Path: "audit", Imports: []string{"internal/demo"}, Tests: []string{"internal/testdb"}},
		{Path: "sql/newroom", Imports: []string{"sql", "goclient/internal/wire"}},
		{Path: "bench", Imports: []string{"internal/pglocal"}},
		{Path: "internal/campaign", Imports: []string{"internal/testdb"}, Tests: []string{"internal/demo"}},
		{Path: "internal/demo/demotest", Imports: []string{"internal/testdb"}},
		{Path: "cmd/leasectl", Imports: []string{"internal/demo", "audit", "evidence"}, Tests: []string{"internal/demo/demotest"}},
	})
	require.Equal(t, []string{
		"goclient imports audit: it may import only []",
		"goclient/prommetrics imports internal/textfmt: a public package imports nothing internal",
		"goclient/prommetrics imports internal/textfmt: it may import only [goclient]",
		"evidence imports cmd/leasectl: no package imports a command",
		"audit imports internal/demo: a public package imports nothing internal",
		"audit imports internal/demo: it may import only [controls sql]",
		"audit imports internal/demo: only cmd/leasectl may",
		"sql/newroom imports goclient/internal/wire: a public package imports nothing internal",
		"internal/campaign imports internal/testdb, which only tests may import",
		"internal/campaign imports internal/demo: only cmd/leasectl may",
	}, got)
}
