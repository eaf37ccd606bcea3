package api_test

import (
	"bytes"
	"flag"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden API listings in api/")

const module = "github.com/mightyetl/leasefence"

// publicPackage is one package of the listing.
type publicPackage struct {
	importPath, dir string
	files           []string
}

// publicPackages lists the module's public packages with the files the
// go command builds for this platform.
func publicPackages(t *testing.T) []publicPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Name}}|{{.Dir}}|{{join .GoFiles \",\"}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err, "go list ./... (is the go command on PATH?)")
	var pkgs []publicPackage
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		f := strings.Split(strings.TrimSpace(line), "|")
		rel := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		if f[1] == "main" || rel == "api" || strings.HasPrefix(rel, "cmd/") ||
			slices.Contains(strings.Split(rel, "/"), "internal") || f[3] == "" {
			continue
		}
		pkgs = append(pkgs, publicPackage{importPath: f[0], dir: f[2], files: strings.Split(f[3], ",")})
	}
	return pkgs
}

// goldenName is the listing file of importPath: its path in the module,
// "/" written as ".".
func goldenName(importPath string) string {
	return strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/"), "/", ".") + ".txt"
}

// listing is the exported API of p: every exported constant, variable,
// function, type and method, without comments (a struct's unexported
// fields show as "// contains filtered or unexported fields").
func listing(t *testing.T, p publicPackage) string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.files {
		f, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, 0) // no comments
		require.NoError(t, err)
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, p.importPath)
	require.NoError(t, err)
	var b bytes.Buffer
	b.WriteString("package " + d.Name + " // import \"" + p.importPath + "\"\n\n")
	print := func(node any) {
		var decl bytes.Buffer
		require.NoError(t, (&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&decl, fset, node))
		// The lines the dropped comments held stay empty: drop them.
		for line := range strings.Lines(decl.String() + "\n") {
			if strings.TrimSpace(line) != "" {
				b.WriteString(line)
			}
		}
		b.WriteString("\n")
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			print(v.Decl)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			f.Decl.Body = nil
			print(f.Decl)
		}
	}
	values(d.Consts)
	values(d.Vars)
	funcs(d.Funcs)
	for _, typ := range d.Types {
		print(typ.Decl)
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs)
		funcs(typ.Methods)
	}
	return b.String()
}

// TestPublicAPI compares every public package's exported API with its
// golden listing in api/. A difference is a change of the public surface:
// review it, then accept it with -update.
func TestPublicAPI(t *testing.T) {
	pkgs := publicPackages(t)
	require.NotEmpty(t, pkgs)
	want := map[string]bool{}
	for _, p := range pkgs {
		name := goldenName(p.importPath)
		want[name] = true
		got := listing(t, p)
		if *update {
			require.NoError(t, os.WriteFile(name, []byte(got), 0o644))
			continue
		}
		golden, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("api/%s: %v; a new public package? go test ./api -run TestPublicAPI -update writes it", name, err)
			continue
		}
		if string(golden) != got {
			t.Errorf("the public API of %s differs from api/%s:\n%s\nIf the change is meant, review it and accept it with: go test ./api -run TestPublicAPI -update",
				p.importPath, name, lineDiff(string(golden), got))
		}
	}
	stale, err := filepath.Glob("*.txt")
	require.NoError(t, err)
	for _, name := range stale {
		if want[name] {
			continue
		}
		if *update {
			require.NoError(t, os.Remove(name))
			continue
		}
		t.Errorf("api/%s lists no public package any more; go test ./api -run TestPublicAPI -update removes it", name)
	}
}

// lineDiff lists the lines only in want ("-") and only in got ("+").
func lineDiff(want, got string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for l := range strings.Lines(s) {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	for l := range strings.Lines(want) {
		if g[l] > 0 {
			g[l]--
			continue
		}
		b.WriteString("- " + l)
	}
	g = count(got)
	for l := range strings.Lines(got) {
		if w[l] > 0 {
			w[l]--
			continue
		}
		b.WriteString("+ " + l)
	}
	return b.String()
}
