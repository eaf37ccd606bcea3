package goclient

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sqlText is a string literal that is (part of) a statement: it calls the
// bundle or starts with a statement keyword.
var sqlText = regexp.MustCompile(`durable_jobs\.|^\s*(SELECT|SET LOCAL|INSERT|UPDATE|DELETE)\b`)

// portFiles are the only files of the package that may hold SQL text.
var portFiles = map[string]bool{"port_pg.go": true, "port_admin.go": true, "port_operator.go": true}

// TestSQLOnlyInPortStatements keeps every statement of the package in one
// place: SQL text only in the port files, each statement a top-level
// constant (or a statement function named sql*) written once, and each
// constant declaration directly followed by the function that runs it.
func TestSQLOnlyInPortStatements(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	seen := map[string]string{} // statement text -> the constants that hold it
	var problems []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for i, decl := range f.Decls {
			allowed := false
			var consts []string
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok == token.CONST {
					allowed = portFiles[name]
					for _, spec := range d.Specs {
						for _, id := range spec.(*ast.ValueSpec).Names {
							consts = append(consts, id.Name)
						}
					}
				}
			case *ast.FuncDecl:
				allowed = portFiles[name] && d.Recv == nil && strings.HasPrefix(d.Name.Name, "sql")
			}
			statement := false
			ast.Inspect(decl, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				text, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				if !sqlText.MatchString(text) {
					return true
				}
				statement = true
				if !allowed {
					problems = append(problems, fset.Position(lit.Pos()).String()+": SQL text outside a statement constant of port_pg.go, port_admin.go or port_operator.go")
				}
				if other, dup := seen[text]; dup && allowed && strings.Contains(text, "durable_jobs.") {
					problems = append(problems, fset.Position(lit.Pos()).String()+": the same statement as "+other)
				}
				seen[text] = strings.Join(consts, ", ")
				return true
			})
			if !statement || len(consts) == 0 || !allowed {
				continue
			}
			var fn *ast.FuncDecl
			if i+1 < len(f.Decls) {
				fn, _ = f.Decls[i+1].(*ast.FuncDecl)
			}
			if fn == nil || !uses(fn, consts) {
				problems = append(problems, fset.Position(decl.Pos()).String()+": statement "+strings.Join(consts, ", ")+
					" is not directly above the function that runs it")
			}
		}
	}
	require.NotEmpty(t, seen, "no statement found: the check looks in the wrong place")
	require.Empty(t, problems)
}

// uses reports whether fn refers to one of names.
func uses(fn *ast.FuncDecl, names []string) bool {
	found := false
	ast.Inspect(fn, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			for _, name := range names {
				found = found || id.Name == name
			}
		}
		return !found
	})
	return found
}
