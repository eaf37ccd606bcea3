package sqltests

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// envSQLCoverageReport names the variable that, when set, gives the file
// the coverage table is also written to (make test prints it at the end).
const envSQLCoverageReport = "LEASEFENCE_SQL_COVERAGE_REPORT"

// plpgsqlFunction is one PL/pgSQL function of the bundle.
type plpgsqlFunction struct {
	oid       uint32
	signature string // regprocedure text, e.g. durable_jobs.cancel_job(bigint)
	source    string // prosrc: the body, whose line 1 is plpgsql_check's line 1
	relid     uint32 // for a trigger function: a table it is attached to, else 0
	newtable  string // for a trigger function with a transition table of new rows: its name, else ""
}

// lintFinding is one plpgsql_check message.
type lintFinding struct {
	function, level, sqlstate, message, detail, hint, statement string
	line                                                        int
}

// acceptedLintFindings are plpgsql_check messages the gate lets pass, each
// with the reason. Every other error or warning fails the gate.
//
// Only performance hints are ever listed here; an error, or a warning of
// the other, extra, security or compatibility classes, always fails.
var acceptedLintFindings = []struct {
	function, level, messagePrefix, why string
}{
	{
		function:      "durable_jobs.raise_stale_claim()",
		level:         "performance",
		messagePrefix: "routine is marked as VOLATILE, should be IMMUTABLE",
		why: "it does nothing but raise LF001; an IMMUTABLE function may be run by the planner " +
			"ahead of time (constant folding), which would raise where no stale claim exists",
	},
}

// checkFlags are the plpgsql_check classes the gate asks for: everything
// (errors, other, extra, performance, security and compatibility warnings),
// and fatal_errors off so one run lists every finding instead of stopping
// at the first.
const checkFlags = `fatal_errors => false, other_warnings => true, extra_warnings => true,
	performance_warnings => true, security_warnings => true, compatibility_warnings => true`

func TestSQLCoverageAndLint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db := testdb.New(t)
	conn := db.Conn(t)

	var preload, profiler string
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('shared_preload_libraries'),
		COALESCE(current_setting('plpgsql_check.profiler', true), '')`).Scan(&preload, &profiler))
	require.True(t, strings.Contains(preload, "plpgsql_check") && profiler == "on",
		"the coverage gate needs the server started with shared_preload_libraries=plpgsql_check and "+
			"plpgsql_check.profiler=on (internal/testdb sets both on its own clusters; set them on a server "+
			"given by %s); found shared_preload_libraries=%q, plpgsql_check.profiler=%q",
		testdb.EnvDatabaseURL, preload, profiler)

	functions := plpgsqlFunctions(t, ctx, conn, "durable_jobs")
	require.NotEmpty(t, functions, "schema durable_jobs has no PL/pgSQL function: the bundle did not load, or the gate looks in the wrong place")

	// The profile is keyed by database and function, so this fresh clone
	// starts empty; reset anyway so a rerun in the same database counts
	// only this run.
	for _, f := range functions {
		_, err := conn.Exec(ctx, "SELECT plpgsql_profiler_reset($1::oid::regprocedure)", f.oid)
		require.NoError(t, err)
	}

	// The whole suite, in name order, one session per file, all in this
	// one database.
	res := runPgProve(t, ctx, db.URL, pgTAPFiles(t)...)
	var problems []string
	if res.problem != "" {
		// Still measure: the figures help whoever fixes the suite.
		problems = append(problems, fmt.Sprintf("the pgTAP suite must pass before its coverage counts "+
			"(TestPgTAP shows each file): %s\n%s", res.problem, trimOutput(res.output, 30)))
	}

	findings := lint(t, ctx, conn, functions)
	coverage := measure(t, ctx, conn, functions)
	report := coverageReport(coverage)
	// Printed to stdout so that a passing run shows it too, and written
	// where `make test` prints it again among the coverage figures.
	fmt.Fprint(os.Stdout, report)
	if path := os.Getenv(envSQLCoverageReport); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(report), 0o644))
	}

	for _, f := range findings {
		problems = append(problems, fmt.Sprintf("plpgsql_check %s in %s line %d: %s%s%s [%s] (statement %s)",
			f.level, f.function, f.line, f.message, prefixed(" DETAIL: ", f.detail), prefixed(" HINT: ", f.hint),
			f.sqlstate, f.statement))
	}
	for _, c := range coverage {
		if c.statements < 1 || c.branches < 1 {
			problems = append(problems, fmt.Sprintf("%s: statement coverage %.1f %%, branch coverage %.1f %% (both must be 100 %%)",
				c.fn.signature, 100*c.statements, 100*c.branches))
		}
		for _, u := range c.uncovered {
			problems = append(problems, "  never executed: "+u)
		}
	}
	if len(problems) > 0 {
		t.Fatalf("SQL coverage and lint gate failed:\n%s\n%s", strings.Join(problems, "\n"), report)
	}
}

// plpgsqlFunctions lists every PL/pgSQL function in schema.
func plpgsqlFunctions(t *testing.T, ctx context.Context, conn *pgx.Conn, schema string) []plpgsqlFunction {
	t.Helper()
	rows, err := conn.Query(ctx, `
		SELECT p.oid, p.oid::regprocedure::text, p.prosrc,
		       COALESCE((SELECT min(tg.tgrelid) FROM pg_trigger tg WHERE tg.tgfoid = p.oid), 0),
		       COALESCE((SELECT min(tg.tgnewtable) FROM pg_trigger tg WHERE tg.tgfoid = p.oid), '')
		FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace
		JOIN pg_language l ON l.oid = p.prolang
		WHERE n.nspname = $1 AND l.lanname = 'plpgsql'
		ORDER BY p.oid::regprocedure::text`, schema)
	require.NoError(t, err)
	var out []plpgsqlFunction
	for rows.Next() {
		var f plpgsqlFunction
		require.NoError(t, rows.Scan(&f.oid, &f.signature, &f.source, &f.relid, &f.newtable))
		out = append(out, f)
	}
	require.NoError(t, rows.Err())
	return out
}

// lint runs plpgsql_check on every function and returns the findings the
// gate does not accept.
func lint(t *testing.T, ctx context.Context, conn *pgx.Conn, functions []plpgsqlFunction) []lintFinding {
	t.Helper()
	var out []lintFinding
	for _, f := range functions {
		rows, err := conn.Query(ctx, `
			SELECT COALESCE(lineno, 0), COALESCE(statement, ''), COALESCE(sqlstate, ''), COALESCE(message, ''),
			       COALESCE(detail, ''), COALESCE(hint, ''), COALESCE(level, '')
			FROM plpgsql_check_function_tb($1::oid::regprocedure, $2::oid::regclass,
				newtable => NULLIF($3, '')::name, `+checkFlags+`)`, f.oid, f.relid, f.newtable)
		require.NoError(t, err)
		for rows.Next() {
			l := lintFinding{function: f.signature}
			require.NoError(t, rows.Scan(&l.line, &l.statement, &l.sqlstate, &l.message, &l.detail, &l.hint, &l.level))
			if why := accepted(l); why != "" {
				fmt.Fprintf(os.Stdout, "plpgsql_check %s hint on %s accepted: %q, because %s\n",
					l.level, l.function, l.message, why)
				continue
			}
			out = append(out, l)
		}
		require.NoError(t, rows.Err())
	}
	return out
}

// accepted returns the reason a finding may pass, or "".
func accepted(l lintFinding) string {
	for _, a := range acceptedLintFindings {
		if l.function == a.function && l.level == a.level && strings.HasPrefix(l.message, a.messagePrefix) {
			return a.why
		}
	}
	return ""
}

// functionCoverage is the profiler's verdict on one function.
//
// Statement coverage is counted here over the statements that
// plpgsql_profiler_function_statements_tb lists, which are the statements
// of the source. plpgsql_coverage_statements also counts the RETURN that
// PL/pgSQL adds after the last statement of a function returning void or a
// set; a function that always raises (durable_jobs.raise_stale_claim) can
// never run that hidden RETURN, so by that figure it could never reach
// 100 %. Branch coverage is plpgsql_coverage_branches as it is.
type functionCoverage struct {
	fn                   plpgsqlFunction
	statements, branches float64 // 0..1
	executed, total      int     // statements
	uncovered            []string
}

// measure reads the profile of every function.
func measure(t *testing.T, ctx context.Context, conn *pgx.Conn, functions []plpgsqlFunction) []functionCoverage {
	t.Helper()
	var out []functionCoverage
	for _, f := range functions {
		c := functionCoverage{fn: f}
		var branches *float64
		require.NoError(t, conn.QueryRow(ctx, "SELECT plpgsql_coverage_branches($1::oid::regprocedure)", f.oid).Scan(&branches))
		if branches != nil {
			c.branches = *branches
		}
		rows, err := conn.Query(ctx, `
			SELECT COALESCE(lineno, 0), COALESCE(exec_stmts, 0), COALESCE(stmtname, ''), COALESCE(parent_note, '')
			FROM plpgsql_profiler_function_statements_tb($1::oid::regprocedure)
			ORDER BY stmtid`, f.oid)
		require.NoError(t, err)
		lines := strings.Split(f.source, "\n")
		for rows.Next() {
			var line int
			var executed int64
			var name, note string
			require.NoError(t, rows.Scan(&line, &executed, &name, &note))
			c.total++
			if executed > 0 {
				c.executed++
				continue
			}
			text := ""
			if line >= 1 && line <= len(lines) {
				text = strings.TrimSpace(lines[line-1])
			}
			where := name
			if note != "" {
				where += ", " + note
			}
			c.uncovered = append(c.uncovered, fmt.Sprintf("%s line %d (%s): %s", f.signature, line, where, text))
		}
		require.NoError(t, rows.Err())
		if c.total > 0 {
			c.statements = float64(c.executed) / float64(c.total)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].fn.signature < out[j].fn.signature })
	return out
}

// coverageReport renders the per-function table and the totals.
func coverageReport(coverage []functionCoverage) string {
	var b strings.Builder
	width := len("function")
	for _, c := range coverage {
		width = max(width, len(c.fn.signature))
	}
	fmt.Fprintf(&b, "SQL coverage (plpgsql_check profiler over the pgTAP suite):\n")
	fmt.Fprintf(&b, "  %-*s  %10s  %8s  %s\n", width, "function", "statements", "branches", "executed")
	executed, total := 0, 0
	full := 0
	for _, c := range coverage {
		fmt.Fprintf(&b, "  %-*s  %9.1f%%  %7.1f%%  %d/%d\n", width, c.fn.signature,
			floor1(100*c.statements), floor1(100*c.branches), c.executed, c.total)
		executed += c.executed
		total += c.total
		if c.statements >= 1 && c.branches >= 1 {
			full++
		}
	}
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(executed) / float64(total)
	}
	fmt.Fprintf(&b, "SQL coverage: %d of %d PL/pgSQL functions fully covered; statements %d/%d (%.1f%%)\n",
		full, len(coverage), executed, total, floor1(pct))
	return b.String()
}

// floor1 rounds down to one decimal, so 99.96 % never prints as 100.0 %.
func floor1(v float64) float64 {
	return float64(int64(v*10)) / 10
}

// prefixed returns prefix+s, or "" for an empty s.
func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// TestCoverageGateReportsWhatItShould checks the gate's reading of
// plpgsql_check on probe functions with a known defect and a known
// uncovered branch, so a gate that silently reads nothing cannot pass.
func TestCoverageGateReportsWhatItShould(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := testdb.New(t).Conn(t)
	_, err := conn.Exec(ctx, `
		CREATE SCHEMA gate_probe;
		CREATE FUNCTION gate_probe.half_covered(p_flag boolean) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
		BEGIN
		    IF p_flag THEN
		        RETURN 'taken';
		    END IF;
		    RETURN 'never taken here';
		END;
		$$;
		CREATE FUNCTION gate_probe.has_unused_variable() RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
		DECLARE
		    v_unused_value integer;
		BEGIN
		    RETURN 1;
		END;
		$$;
		SELECT gate_probe.half_covered(true), gate_probe.has_unused_variable();`)
	require.NoError(t, err)

	functions := plpgsqlFunctions(t, ctx, conn, "gate_probe")
	require.Len(t, functions, 2)
	coverage := measure(t, ctx, conn, functions)
	half := coverage[0]
	require.Equal(t, "gate_probe.half_covered(boolean)", half.fn.signature)
	require.Less(t, half.statements, 1.0)
	require.InDelta(t, 0.5, half.branches, 0.001, "one of the IF's two branches ran")
	require.Len(t, half.uncovered, 1)
	require.Contains(t, half.uncovered[0], "RETURN 'never taken here';")
	require.Equal(t, 1.0, coverage[1].statements)
	require.Contains(t, coverageReport(coverage), "1 of 2 PL/pgSQL functions fully covered")

	findings := lint(t, ctx, conn, functions)
	require.Len(t, findings, 1, "%+v", findings)
	require.Equal(t, "gate_probe.has_unused_variable()", findings[0].function)
	require.Contains(t, findings[0].message, "unused variable")
}
