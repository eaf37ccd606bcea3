// Package sqltests runs the bundle's pgTAP suite (the *.sql files in this
// folder) from go test, and holds the SQL coverage and lint gate.
//
// # The pgTAP suite
//
// Each *.sql file tests one concern and has the same shape, so that it also
// runs with plain pg_prove on any database the bundle was applied to:
//
//	BEGIN;
//	CREATE EXTENSION IF NOT EXISTS pgtap;
//	SELECT plan(N);
//	... assertions, each with a sentence that reads as a requirement ...
//	SELECT * FROM finish();
//	ROLLBACK;
//
// TestPgTAP runs every file as its own parallel subtest in its own database
// cloned from the migrated template (internal/testdb), through
// `pg_prove --verbose`. A failing assertion, a plan that does not match, a
// missing plan, or any SKIP or TODO fails the subtest and prints pg_prove's
// output.
//
// To run one file by hand against a migrated database:
//
//	pg_prove --verbose --dbname "$DATABASE_URL" sql/tests/06_terminal.sql
//
// # The coverage and lint gate
//
// TestSQLCoverageAndLint runs the whole suite once more, in one database,
// with the plpgsql_check profiler recording every PL/pgSQL statement, then
// requires for every PL/pgSQL function in schema durable_jobs that
// plpgsql_check reports no error or warning and that statement and branch
// coverage are both 100 %. It prints a coverage table, and every uncovered
// statement with its function, line and text.
package sqltests
