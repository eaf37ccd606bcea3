package docscheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mightyetl/leasefence/controls"
)

// Kind says what sort of thing a citation names.
type Kind string

// The kinds of citation the checker understands.
const (
	// KindTest is a Go test function name, such as TestRenewAfterCancelIsStale.
	KindTest Kind = "test"
	// KindControl is a control identifier, such as LF-ACC-01.
	KindControl Kind = "control"
	// KindAuditCheck is a `leasectl audit` check identifier, such as AUDIT-SEARCH-PATH.
	KindAuditCheck Kind = "audit check"
	// KindEvidenceSection is a `leasectl evidence` section identifier.
	KindEvidenceSection Kind = "evidence section"
	// KindMetric is a Prometheus metric name starting with leasefence_.
	KindMetric Kind = "metric"
	// KindAlert is a Prometheus alert rule name starting with Leasefence.
	KindAlert Kind = "alert"
	// KindSQLObject is a function, table or type in schema durable_jobs.
	KindSQLObject Kind = "SQL object"
	// KindRole is a database role created by the bundle (durable_job_...).
	KindRole Kind = "role"
	// KindPath is a file or directory of the repository, such as sql/tests/.
	KindPath Kind = "path"
)

// Reference is one citation found in a document: which file, which line
// (counting from 1), what kind of thing and its name.
type Reference struct {
	// File is the document's repository-relative path.
	File string
	// Line is the line the citation is on, counting from 1.
	Line int
	// Kind says what sort of thing is cited.
	Kind Kind
	// Name is the cited name as written (a test name without its subtest).
	Name string
}

// String formats the reference as "file:line: kind name".
func (r Reference) String() string {
	return fmt.Sprintf("%s:%d: %s %s", r.File, r.Line, r.Kind, r.Name)
}

var (
	backtickSpan   = regexp.MustCompile("`([^`\n]+)`")
	testNameRef    = regexp.MustCompile(`^(Test[A-Z0-9_][A-Za-z0-9_]*)(?:/.*)?$`)
	controlRef     = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(LF-[A-Z]{3}-[0-9]{2})\b`)
	auditCheckRef  = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(AUDIT(?:-[A-Z]+)+)\b`)
	evidenceRef    = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(EVIDENCE(?:-[A-Z]+)+)\b`)
	metricRef      = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])(leasefence_[a-z0-9_]*[a-z0-9])\b`)
	alertRef       = regexp.MustCompile(`\bLeasefence[A-Z][A-Za-z0-9]*\b`)
	sqlObjectRef   = regexp.MustCompile(`\bdurable_jobs\.([a-z_][a-z0-9_]*)`)
	roleRef        = regexp.MustCompile(`\bdurable_job_[a-z_]*[a-z]\b`)
	repoPathRef    = regexp.MustCompile(`^(?:sql|goclient|controls|audit|evidence|cmd|internal|deploy|docs|bench|examples|scripts)/[A-Za-z0-9_./*-]*$`)
	seedHeading    = regexp.MustCompile(`(?i)^#+\s.*seed test requirements`)
	anyHeading     = regexp.MustCompile(`^#+\s`)
	seedRow        = regexp.MustCompile(`^\|\s*([0-9]+)\s*\|`)
	goTestFunc     = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	sqlCreate      = regexp.MustCompile(`(?i)\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|TABLE|TYPE|VIEW|SEQUENCE)\s+durable_jobs\.([a-z_][a-z0-9_]*)`)
	roleDefinition = regexp.MustCompile(`'(durable_job_[a-z_]*[a-z])'`)
	alertRule      = regexp.MustCompile(`(?m)^\s*-?\s*alert:\s*["']?([A-Za-z0-9_]+)["']?\s*$`)
)

// Extract returns every citation in one Markdown document, in order of
// appearance. file is only copied into the references.
func Extract(file, text string) []Reference {
	var refs []Reference
	add := func(line int, kind Kind, name string) {
		refs = append(refs, Reference{File: file, Line: line, Kind: kind, Name: name})
	}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		for _, m := range backtickSpan.FindAllStringSubmatch(line, -1) {
			span := strings.TrimSpace(m[1])
			if t := testNameRef.FindStringSubmatch(span); t != nil {
				add(n, KindTest, t[1])
			}
			if repoPathRef.MatchString(span) {
				add(n, KindPath, span)
			}
		}
		for _, m := range controlRef.FindAllStringSubmatch(line, -1) {
			add(n, KindControl, m[1])
		}
		for _, m := range auditCheckRef.FindAllStringSubmatch(line, -1) {
			add(n, KindAuditCheck, m[1])
		}
		for _, m := range evidenceRef.FindAllStringSubmatch(line, -1) {
			add(n, KindEvidenceSection, m[1])
		}
		for _, m := range metricRef.FindAllStringSubmatch(line, -1) {
			add(n, KindMetric, m[1])
		}
		for _, m := range alertRef.FindAllString(line, -1) {
			add(n, KindAlert, m)
		}
		for _, m := range sqlObjectRef.FindAllStringSubmatch(line, -1) {
			add(n, KindSQLObject, "durable_jobs."+m[1])
		}
		for _, m := range roleRef.FindAllString(line, -1) {
			add(n, KindRole, m)
		}
	}
	return refs
}

// Known is what the repository really contains: the names a citation may
// resolve to, by kind. Root is the repository root, used to resolve paths.
type Known struct {
	// Root is the repository root directory.
	Root string
	// Names holds, per kind, the set of names that exist.
	Names map[Kind]map[string]bool
}

// Has reports whether name is known for kind.
func (k Known) Has(kind Kind, name string) bool { return k.Names[kind][name] }

// add records names as known for kind.
func (k *Known) add(kind Kind, names ...string) {
	if k.Names == nil {
		k.Names = map[Kind]map[string]bool{}
	}
	if k.Names[kind] == nil {
		k.Names[kind] = map[string]bool{}
	}
	for _, n := range names {
		k.Names[kind][n] = true
	}
}

// Resolves reports whether one citation names something that exists.
func (k Known) Resolves(r Reference) bool {
	switch r.Kind {
	case KindPath:
		matches, err := filepath.Glob(filepath.Join(k.Root, filepath.FromSlash(strings.TrimSuffix(r.Name, "/"))))
		return err == nil && len(matches) > 0
	case KindMetric:
		if k.Has(KindMetric, r.Name) {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(r.Name, suffix); ok && k.Has(KindMetric, base) {
				return true
			}
		}
		return false
	default:
		return k.Has(r.Kind, r.Name)
	}
}

// Unresolved returns the citations that name nothing in the repository.
func (k Known) Unresolved(refs []Reference) []Reference {
	var out []Reference
	for _, r := range refs {
		if !k.Resolves(r) {
			out = append(out, r)
		}
	}
	return out
}

// SeedMatrixProblems checks the "Seed test requirements" table of the
// compliance matrix: every requirement from 1 to total has exactly one row,
// and each row cites at least one test. It returns one sentence per problem,
// none when the table is complete. Whether the cited tests exist is checked
// separately, like every other citation.
func SeedMatrixProblems(file, text string, total int) []string {
	var problems []string
	rows := map[int]int{}
	inSection := false
	found := false
	for i, line := range strings.Split(text, "\n") {
		switch {
		case seedHeading.MatchString(line):
			inSection, found = true, true
			continue
		case anyHeading.MatchString(line):
			inSection = false
			continue
		}
		if !inSection {
			continue
		}
		m := seedRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		number, _ := strconv.Atoi(m[1])
		if number < 1 || number > total {
			problems = append(problems, fmt.Sprintf("%s:%d: seed requirement %d does not exist (1 to %d)", file, i+1, number, total))
			continue
		}
		rows[number]++
		tests := 0
		for _, r := range Extract(file, line) {
			if r.Kind == KindTest {
				tests++
			}
		}
		if tests == 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: seed requirement %d cites no test", file, i+1, number))
		}
	}
	if !found {
		return []string{fmt.Sprintf("%s: no \"Seed test requirements\" section", file)}
	}
	for n := 1; n <= total; n++ {
		switch rows[n] {
		case 0:
			problems = append(problems, fmt.Sprintf("%s: seed requirement %d is missing from the matrix", file, n))
		case 1:
		default:
			problems = append(problems, fmt.Sprintf("%s: seed requirement %d has %d rows, want 1", file, n, rows[n]))
		}
	}
	return problems
}

// FindRoot returns the nearest directory at or above start that holds a
// go.mod file: the repository root.
func FindRoot(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("docscheck: no go.mod at or above " + start)
		}
		dir = parent
	}
}

// MarkdownFiles returns the repository-relative, slash-separated paths of
// every .md file under root/docs, sorted.
func MarkdownFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// LoadKnown collects every name a document may cite from the repository at
// root: test functions from *_test.go files (skipping the directories the go
// tool ignores: names starting with "." or "_", testdata, vendor), identifiers from
// package controls, the given metric names, alert rules from
// deploy/prometheus/leasefence-alerts.yml, functions, tables and types from
// sql/migrations and sql/functions, and roles from sql/roles.
func LoadKnown(root string, metricNames []string) (Known, error) {
	k := Known{Root: root}
	k.add(KindTest)
	for _, c := range controls.Controls() {
		k.add(KindControl, c.ID)
	}
	for _, a := range controls.AuditChecks() {
		k.add(KindAuditCheck, a.ID)
	}
	for _, s := range controls.EvidenceSections() {
		k.add(KindEvidenceSection, s.ID)
	}
	k.add(KindMetric, metricNames...)

	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") ||
				d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range goTestFunc.FindAllSubmatch(src, -1) {
			k.add(KindTest, string(m[1]))
		}
		return nil
	})
	if err != nil {
		return Known{}, fmt.Errorf("docscheck: reading test files: %w", err)
	}

	alerts, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "leasefence-alerts.yml"))
	if err != nil {
		return Known{}, fmt.Errorf("docscheck: reading alert rules: %w", err)
	}
	for _, m := range alertRule.FindAllSubmatch(alerts, -1) {
		k.add(KindAlert, string(m[1]))
	}

	sqlFiles, err := globAll(root, "sql/migrations/*.sql", "sql/functions/*.sql")
	if err != nil {
		return Known{}, err
	}
	for _, f := range sqlFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			return Known{}, fmt.Errorf("docscheck: reading SQL: %w", err)
		}
		for _, m := range sqlCreate.FindAllSubmatch(src, -1) {
			k.add(KindSQLObject, "durable_jobs."+string(m[1]))
		}
	}
	roleFiles, err := globAll(root, "sql/roles/*.sql", "sql/migrations/*.sql")
	if err != nil {
		return Known{}, err
	}
	for _, f := range roleFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			return Known{}, fmt.Errorf("docscheck: reading roles: %w", err)
		}
		for _, m := range roleDefinition.FindAllSubmatch(src, -1) {
			k.add(KindRole, string(m[1]))
		}
	}
	return k, nil
}

// globAll returns the files matching any of the slash-separated patterns
// under root.
func globAll(root string, patterns ...string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("docscheck: %s: %w", p, err)
		}
		out = append(out, m...)
	}
	return out, nil
}
