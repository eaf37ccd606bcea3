package sqltests

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

// pgTAPFiles returns the suite's files in name order.
func pgTAPFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.sql")
	require.NoError(t, err)
	sort.Strings(files)
	return files
}

var (
	// directiveLine finds a TAP SKIP or TODO directive, e.g.
	// "ok 4 # SKIP no network" or "not ok 5 - x # TODO later".
	directiveLine = regexp.MustCompile(`(?i)#\s*(skip|todo)\b`)
	// tapLine is a test line or a plan line.
	tapLine  = regexp.MustCompile(`^\s*((not )?ok\b|1\.\.\d+)`)
	planLine = regexp.MustCompile(`^\s*1\.\.(\d+)`)
	okLine   = regexp.MustCompile(`^\s*ok \d+`)
	// skippedFile is how pg_prove reports a file whose plan is "1..0 # SKIP".
	skippedFile = regexp.MustCompile(`\.\. skipped:`)
)

// pgProveResult is what one pg_prove run said.
type pgProveResult struct {
	output  string
	passed  int // "ok" lines
	problem string
}

// runPgProve runs pg_prove --verbose over files against the database at
// dbURL and judges its output.
func runPgProve(t *testing.T, ctx context.Context, dbURL string, files ...string) pgProveResult {
	t.Helper()
	pgProve, err := exec.LookPath("pg_prove")
	require.NoError(t, err, "pg_prove is not installed; run make deps "+
		"(apt-get install postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl)")
	args := []string{"--verbose", "--psql-bin", psqlPath(t)}
	cmd := exec.CommandContext(ctx, pgProve, append(args, files...)...)
	// Notices such as "extension pgtap already exists, skipping" are noise.
	cmd.Env = append(libpqEnv(t, dbURL), "PGOPTIONS=-c client_min_messages=warning", "PGAPPNAME=leasefence-pgtap")
	out, runErr := cmd.CombinedOutput()
	res := pgProveResult{output: string(out)}
	seenTest := false
	planned := false
	for _, line := range strings.Split(res.output, "\n") {
		if okLine.MatchString(line) {
			res.passed++
		}
		if skippedFile.MatchString(line) {
			res.problem = "a pgTAP file was skipped as a whole: " + strings.TrimSpace(line)
		}
		if directiveLine.MatchString(line) && tapLine.MatchString(line) {
			res.problem = "a pgTAP test was skipped or marked TODO: " + strings.TrimSpace(line)
		}
		if planLine.MatchString(line) {
			if !seenTest {
				planned = true
			}
			if directiveLine.MatchString(line) {
				res.problem = "a pgTAP file was skipped as a whole: " + strings.TrimSpace(line)
			}
		} else if tapLine.MatchString(line) {
			if !planned && res.problem == "" {
				res.problem = "no plan declared before the first test (start with SELECT plan(N))"
			}
			seenTest = true
		}
	}
	switch {
	case res.problem != "":
	case runErr != nil:
		res.problem = fmt.Sprintf("pg_prove failed (%v)", runErr)
	case !strings.Contains(res.output, "Result: PASS"):
		res.problem = "pg_prove did not report Result: PASS"
	case res.passed == 0:
		res.problem = "pg_prove ran no test"
	}
	return res
}

// libpqEnv returns the environment with the PG* variables psql reads set
// to the parts of dbURL. (pg_prove cannot take a URL: it splits its
// options at "=".)
func libpqEnv(t *testing.T, dbURL string) []string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	password, _ := u.User.Password()
	env = append(env,
		"PGHOST="+u.Hostname(),
		"PGPORT="+u.Port(),
		"PGUSER="+u.User.Username(),
		"PGDATABASE="+strings.TrimPrefix(u.Path, "/"),
		"PGSSLMODE="+u.Query().Get("sslmode"),
	)
	if password != "" {
		env = append(env, "PGPASSWORD="+password)
	}
	return env
}

// psqlPath returns the psql pg_prove should run: the one on PATH, else the
// one next to the server binaries.
func psqlPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	dir, err := pglocal.FindBinDir()
	require.NoError(t, err)
	p := filepath.Join(dir, "psql")
	_, err = os.Stat(p)
	require.NoError(t, err, "psql is not installed; run make deps (apt-get install postgresql-15)")
	return p
}

func TestPgTAPSuiteHasFiles(t *testing.T) {
	require.NotEmpty(t, pgTAPFiles(t), "sql/tests holds no pgTAP file")
}

// houseShape is the statement order every pgTAP file follows, so that it
// also runs with plain pg_prove on a migrated database.
var houseShape = struct{ head, tail []*regexp.Regexp }{
	head: []*regexp.Regexp{
		regexp.MustCompile(`(?i)^BEGIN;$`),
		regexp.MustCompile(`(?i)^CREATE EXTENSION IF NOT EXISTS pgtap;$`),
		regexp.MustCompile(`(?i)^SELECT plan\(\d+\);$`),
	},
	tail: []*regexp.Regexp{
		regexp.MustCompile(`(?i)^SELECT \* FROM finish\(\);$`),
		regexp.MustCompile(`(?i)^ROLLBACK;$`),
	},
}

func TestPgTAPFilesFollowTheHouseShape(t *testing.T) {
	for _, file := range pgTAPFiles(t) {
		text, err := os.ReadFile(file)
		require.NoError(t, err)
		var lines []string
		for _, line := range strings.Split(string(text), "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "--") {
				lines = append(lines, line)
			}
		}
		require.GreaterOrEqual(t, len(lines), 5, "%s is too short to be a pgTAP file", file)
		for i, want := range houseShape.head {
			require.Regexp(t, want, lines[i], "%s: statement %d must match %s", file, i+1, want)
		}
		for i, want := range houseShape.tail {
			got := lines[len(lines)-len(houseShape.tail)+i]
			require.Regexp(t, want, got, "%s: must end with SELECT * FROM finish(); ROLLBACK;", file)
		}
	}
}

// fixtureFile is the helpers the pgTAP files share; a file includes it with
// fixtureInclude right after its plan.
const (
	fixtureFile    = "fixture/fixture.sql"
	fixtureInclude = `\ir fixture/fixture.sql`
)

var (
	// fixtureObject is an object the fixture makes, and the only kinds it
	// may make: a temporary table, a function in pg_temp.
	fixtureObject = regexp.MustCompile(`(?im)^\s*CREATE\s+(TEMP TABLE|FUNCTION pg_temp\.)\s*(\w+)`)
	// anyCreate is every CREATE statement at the start of a line.
	anyCreate = regexp.MustCompile(`(?im)^\s*CREATE\b`)
	// assertion is a pgTAP call that would count against a file's plan.
	assertion = regexp.MustCompile(`(?i)\b(plan|ok|is|isnt|results_eq|set_eq|throws_ok|lives_ok|is_empty|finish)\s*\(`)
)

// TestPgTAPFixtureIsTheOnePlace keeps the shared helpers in one place: the
// fixture makes only session-temporary objects (so the coverage gate, which
// counts schema durable_jobs, never sees them) and no assertion (so plans
// do not change); a file that includes it does so right after its plan;
// and no file makes an object of the same name as one of the fixture's.
func TestPgTAPFixtureIsTheOnePlace(t *testing.T) {
	text, err := os.ReadFile(fixtureFile)
	require.NoError(t, err)
	var code []string
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			code = append(code, line)
		}
	}
	body := strings.Join(code, "\n")
	objects := fixtureObject.FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, objects, "the fixture makes no helper")
	require.Len(t, anyCreate.FindAllString(body, -1), len(objects),
		"the fixture may make only temporary tables and functions in pg_temp")
	require.NotRegexp(t, assertion, body, "the fixture must not plan or assert")
	names := map[string]bool{}
	for _, o := range objects {
		names[strings.ToLower(o[2])] = true
	}
	users := 0
	for _, file := range pgTAPFiles(t) {
		text, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, o := range fixtureObject.FindAllStringSubmatch(string(text), -1) {
			require.False(t, names[strings.ToLower(o[2])], "%s makes %s, which the fixture already makes", file, o[2])
		}
		var lines []string
		for _, line := range strings.Split(string(text), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
				lines = append(lines, line)
			}
		}
		for i, line := range lines {
			if strings.HasPrefix(line, `\i`) {
				require.Equal(t, fixtureInclude, line, "%s: the only file a pgTAP file includes is the fixture", file)
				require.Equal(t, len(houseShape.head), i, "%s: the fixture is included right after the plan", file)
				users++
			}
		}
	}
	require.NotZero(t, users, "no pgTAP file includes the fixture")
}

func TestPgTAP(t *testing.T) {
	for _, file := range pgTAPFiles(t) {
		name := strings.TrimSuffix(file, ".sql")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			db := testdb.New(t)
			res := runPgProve(t, ctx, db.URL, file)
			if res.problem != "" {
				t.Fatalf("%s: %s\n--- pg_prove output ---\n%s", file, res.problem, res.output)
			}
			t.Logf("%s: %d pgTAP assertions passed", file, res.passed)
		})
	}
}

// trimOutput keeps the last n lines of pg_prove's output.
func trimOutput(out string, n int) string {
	lines := bytes.Split([]byte(strings.TrimRight(out, "\n")), []byte("\n"))
	if len(lines) > n {
		lines = append([][]byte{[]byte(fmt.Sprintf("... (%d lines before)", len(lines)-n))}, lines[len(lines)-n:]...)
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// TestPgProveVerdicts runs the harness on small fixture files, so each way
// a pgTAP file can go wrong is known to fail the suite.
func TestPgProveVerdicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t) // each fixture rolls back, so they can share it
	for fixture, wantProblem := range map[string]string{
		"passing":  "",
		"failing":  "pg_prove failed",
		"skipping": "skipped or marked TODO",
		"todo":     "skipped or marked TODO",
		"noplan":   "no plan declared before the first test",
		"badplan":  "pg_prove failed",
		"sqlerror": "pg_prove failed",
		"skipall":  "skipped",
	} {
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			res := runPgProve(t, ctx, db.URL, filepath.Join("testdata", fixture+".sql"))
			if wantProblem == "" {
				require.Empty(t, res.problem, "%s:\n%s", fixture, res.output)
				require.Equal(t, 2, res.passed, "%s:\n%s", fixture, res.output)
				return
			}
			require.Contains(t, res.problem, wantProblem, "%s:\n%s", fixture, res.output)
		})
	}
}
