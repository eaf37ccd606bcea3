package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	"textfmt":              {},
	"audit":                {"controls", "sql", "textfmt"},
	"evidence":             {"audit", "controls", "goclient", "sql", "textfmt"},
	"internal/demo":        {"audit", "goclient", "internal/leaseport", "internal/pglocal", "sql", "textfmt"},
	// The command is its process (signals, exit code) over the CLI.
	"cmd/leasectl": {"internal/cli"},
}

// testOnly are the packages that only tests (and other test-only packages)
// may import: they start databases and fail tests.
var testOnly = []string{"internal/testdb", "internal/demo/demotest"}

// notPublic are the rooms whose packages a program outside the module does
// not import: commands, the example worker module, the benchmarks and the
// reliability campaign (bench, a module of its own beside the main one) and
// the coverage gate script (tools; the benchmarks and the campaign share
// internal/pglocal and internal/testdb with the tests). Everything else,
// bar the internal packages and testOnly, is public: part of what a user
// of the module imports.
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
//   - anything but internal/cli (leasectl's CLI) imports internal/demo;
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
			if imp == "internal/demo" && p.Path != "internal/cli" {
				out = append(out, fmt.Sprintf("%s imports internal/demo: only internal/cli (leasectl) may", p.Path))
			}
		}
	}
	return out
}

// root is the repository's root: the main module's folder, which holds
// go.work and the bench module's folder.
const root = "../.."

// goCommand runs the go command in the repository's root with GOWORK set
// to gowork ("off": the main module alone, as a user of it builds it; the
// path of go.work: the workspace of this checkout) and returns its output.
func goCommand(t *testing.T, gowork string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK="+gowork)
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("GOWORK=%s go %s: %v\n%s", gowork, strings.Join(args, " "), err, exitErr.Stderr)
	}
	require.NoError(t, err)
	return out
}

// workspace is the GOWORK of this checkout: its go.work.
func workspace(t *testing.T) string {
	t.Helper()
	work, err := filepath.Abs(filepath.Join(root, "go.work"))
	require.NoError(t, err)
	return work
}

// modulePackages lists the packages of the main module and of the bench
// module (the benchmarks and the campaign: tools, but held to the same
// rules) with go list in the workspace.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	out := goCommand(t, workspace(t), "list", "-json=ImportPath,Imports,TestImports,XTestImports", "./...", "./bench/...")
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
	for _, room := range append(testOnly, "cmd/leasectl", "bench", "bench/campaign") {
		require.Contains(t, paths, room)
	}
	// The public rule covers the packages a user imports, and only those.
	for _, room := range []string{"sql", "goclient", "goclient/prommetrics", "controls", "audit", "evidence"} {
		require.True(t, public(room), room)
	}
	for _, room := range append(testOnly, "cmd/leasectl", "internal/cli", "internal/demo", "internal/controls", "examples/etlworker",
		"bench", "bench/cmd/leasebench", "bench/campaign", "bench/campaign/worker", "scripts/covergate", "goclient/internal/x") {
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
		{Path: "bench/campaign", Imports: []string{"internal/testdb"}, Tests: []string{"internal/demo"}},
		{Path: "internal/demo/demotest", Imports: []string{"internal/testdb"}},
		{Path: "cmd/leasectl", Imports: []string{"internal/demo", "audit", "evidence"}, Tests: []string{"internal/demo/demotest"}},
	})
	require.Equal(t, []string{
		"goclient imports audit: it may import only []",
		"goclient/prommetrics imports internal/textfmt: a public package imports nothing internal",
		"goclient/prommetrics imports internal/textfmt: it may import only [goclient]",
		"evidence imports cmd/leasectl: no package imports a command",
		"audit imports internal/demo: a public package imports nothing internal",
		"audit imports internal/demo: it may import only [controls sql textfmt]",
		"audit imports internal/demo: only internal/cli (leasectl) may",
		"sql/newroom imports goclient/internal/wire: a public package imports nothing internal",
		"bench/campaign imports internal/testdb, which only tests may import",
		"bench/campaign imports internal/demo: only internal/cli (leasectl) may",
		"cmd/leasectl imports internal/demo: it may import only [internal/cli]",
		"cmd/leasectl imports audit: it may import only [internal/cli]",
		"cmd/leasectl imports evidence: it may import only [internal/cli]",
		"cmd/leasectl imports internal/demo: only internal/cli (leasectl) may",
	}, got)
}

// TestToolsAreNotPackagesOfTheModule: the benchmarks and the reliability
// campaign are a module of their own (bench/go.mod), so that a user's go
// get and go list ./... of the main module carry neither (issue 35). go
// list ./... in the root lists no bench or campaign package, neither as a
// user of the module sees it (GOWORK=off) nor in this checkout, whose
// go.work joins the two modules. And joining them changes no version the
// main module builds with: were bench to require a newer version of a
// dependency, the main module's tests in this checkout would run with a
// version its users do not get.
func TestToolsAreNotPackagesOfTheModule(t *testing.T) {
	t.Parallel()
	work := workspace(t)
	for _, gowork := range []string{"off", work} {
		paths := strings.Fields(string(goCommand(t, gowork, "list", "./...")))
		require.Contains(t, paths, module+"/goclient", "GOWORK=%s", gowork)
		for _, path := range paths {
			rel := strings.TrimPrefix(path, module)
			require.False(t, rel == "/bench" || strings.HasPrefix(rel, "/bench/") || strings.Contains(rel, "campaign"),
				"GOWORK=%s go list ./... lists %s: bench/ and its campaign must stay a module of their own", gowork, path)
		}
	}
	// The module and version of each package the main module's packages
	// and their tests build with.
	versions := func(gowork string) map[string]string {
		v := map[string]string{}
		out := goCommand(t, gowork, "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...")
		for line := range strings.Lines(string(out)) {
			if f := strings.Fields(line); len(f) == 2 {
				v[f[0]] = f[1]
			}
		}
		return v
	}
	alone, joined := versions("off"), versions(work)
	require.Contains(t, alone, "github.com/jackc/pgx/v5")
	for path, version := range alone {
		require.Equal(t, version, joined[path],
			"go.work selects another version of %s than the main module alone: bench/go.mod requires a newer one", path)
	}
}
