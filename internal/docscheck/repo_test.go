package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goFiles returns the repository's .go files (tests or not), skipping the
// directories the go tool ignores.
func goFiles(t *testing.T, root string, tests bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && strings.HasSuffix(path, "_test.go") == tests {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	return files
}

// skipCall matches a call that skips a test. It is built from pieces so that
// this file does not match itself.
var skipCall = regexp.MustCompile(`\.(` + "Skip" + `|` + "Skipf" + `|` + "SkipNow" + `)\(|testing\.` + "Short" + `\(`)

func TestNoTestIsSkipped(t *testing.T) {
	t.Parallel()
	root, err := FindRoot(".")
	require.NoError(t, err)
	files := goFiles(t, root, true)
	require.NotEmpty(t, files)
	var found []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, line := range strings.Split(string(src), "\n") {
			if skipCall.MatchString(line) {
				rel, _ := filepath.Rel(root, f)
				found = append(found, rel+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
			}
		}
	}
	require.Empty(t, found, "no test may be skipped; a missing dependency must fail with how to install it:\n%s",
		strings.Join(found, "\n"))
}

func TestSkipDetectorFindsSkips(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"\tt." + "Skip(\"no db\")", "if testing." + "Short() {", "t." + "SkipNow()", "b." + "Skipf(\"x %d\", 1)"} {
		require.True(t, skipCall.MatchString(line), line)
	}
	for _, line := range []string{"t.Run(\"skip\", f)", "// we never skip", "SkipLocked"} {
		require.False(t, skipCall.MatchString(line), line)
	}
}

// undocumented returns "file:line: name" for every exported top-level name
// (function, method, type, constant, variable) and every exported field or
// interface method of an exported type that has no doc comment.
func undocumented(fset *token.FileSet, file *ast.File) []string {
	var out []string
	report := func(pos token.Pos, name string) {
		p := fset.Position(pos)
		out = append(out, p.Filename+":"+strconv.Itoa(p.Line)+": "+name)
	}
	hasDoc := func(groups ...*ast.CommentGroup) bool {
		for _, g := range groups {
			if g != nil && strings.TrimSpace(g.Text()) != "" {
				return true
			}
		}
		return false
	}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv != nil && !exportedReceiver(d.Recv) {
				continue
			}
			if !hasDoc(d.Doc) {
				report(d.Pos(), d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if !hasDoc(d.Doc, s.Doc) {
						report(s.Pos(), s.Name.Name)
					}
					out = append(out, undocumentedMembers(fset, s)...)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && !hasDoc(d.Doc, s.Doc, s.Comment) {
							report(n.Pos(), n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// undocumentedMembers reports the exported fields of a struct type and the
// methods of an interface type that have neither a doc nor a line comment.
func undocumentedMembers(fset *token.FileSet, s *ast.TypeSpec) []string {
	var fields *ast.FieldList
	switch tt := s.Type.(type) {
	case *ast.StructType:
		fields = tt.Fields
	case *ast.InterfaceType:
		fields = tt.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range fields.List {
		if (f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "") || (f.Comment != nil && strings.TrimSpace(f.Comment.Text()) != "") {
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				p := fset.Position(n.Pos())
				out = append(out, p.Filename+":"+strconv.Itoa(p.Line)+": "+s.Name.Name+"."+n.Name)
			}
		}
	}
	return out
}

// exportedReceiver reports whether a method's receiver type is exported.
func exportedReceiver(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	expr := recv.List[0].Type
	for {
		switch e := expr.(type) {
		case *ast.StarExpr:
			expr = e.X
		case *ast.IndexExpr:
			expr = e.X
		case *ast.IndexListExpr:
			expr = e.X
		case *ast.Ident:
			return e.IsExported()
		default:
			return false
		}
	}
}

func TestEveryExportedNameHasADocComment(t *testing.T) {
	t.Parallel()
	root, err := FindRoot(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var missing []string
	for _, f := range goFiles(t, root, false) {
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, m := range undocumented(fset, file) {
			rel, _ := filepath.Rel(root, m)
			if rel == "" || strings.HasPrefix(rel, "..") {
				rel = m
			}
			missing = append(missing, rel)
		}
	}
	require.Empty(t, missing, "every exported name needs a doc comment a beginner can read:\n%s", strings.Join(missing, "\n"))
}

func TestDocCommentDetectorFindsMissingComments(t *testing.T) {
	t.Parallel()
	src := `package p

// Documented is fine.
func Documented() {}

func Bare() {}

type hidden struct{ Open int }

func (hidden) Exported() {}

// Config is documented, one field is not.
type Config struct {
	// Good has a comment.
	Good int
	Bad  int
	Tail int // a line comment counts
	lower int
}

// Grouped constants share the group's comment.
const (
	A = 1
	B = 2
)

const Lonely = 3

var (
	// X has its own.
	X = 1
	Y = 2
)

// Port is an interface.
type Port interface {
	// Call is documented.
	Call()
	Hang()
}

func (c *Config) Method() {}
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	require.NoError(t, err)
	require.Equal(t, []string{
		"p.go:6: Bare",
		"p.go:16: Config.Bad",
		"p.go:27: Lonely",
		"p.go:32: Y",
		"p.go:39: Port.Hang",
		"p.go:42: Method",
	}, undocumented(fset, file))
}

func TestEveryPackageHasDocGo(t *testing.T) {
	t.Parallel()
	root, err := FindRoot(".")
	require.NoError(t, err)
	dirs := map[string]bool{}
	for _, f := range goFiles(t, root, false) {
		dirs[filepath.Dir(f)] = true
	}
	for _, f := range goFiles(t, root, true) {
		dirs[filepath.Dir(f)] = true
	}
	var missing []string
	for d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "doc.go")); err != nil {
			rel, _ := filepath.Rel(root, d)
			missing = append(missing, rel)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "each package needs a doc.go with its package documentation:\n%s", strings.Join(missing, "\n"))
}
