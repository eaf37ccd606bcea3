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
// A check that needs a transaction of another isolation level commits the
// plan's transaction and runs first, each in a transaction of its own
// (15_policy and 16_evidence do).
//
// A file is named after its concern and numbered in reading order: the
// schema and privileges, the shared rules and bad input, then a job's life
// (enqueue, wake-up, claim, renewal, terminal writes, outcome tallies,
// failover), the operator's view of jobs, and the controls (policy,
// evidence, retention, change control, maker-checker). A change adds its
// assertions to the file of its concern, as a section with a header that
// says what the change does, never as a file of its own; a new concern is
// a new file. Sections share the file's one transaction, so a section that
// needs a state an earlier one changed sets it back first and says so.
//
// The queues, roles, tables and functions a file makes carry its number:
// t06_ in 06_wakeup.sql, and a letter after it for each section
// whose names would otherwise meet (t15a_, t15b_ in 15_policy.sql).
//
// # The shared fixture
//
// Helpers more than one file needs live in one file, fixture/fixture.sql
// (its header lists them with their arguments), never in a file's own
// prelude. A file that uses them includes the fixture right after its plan,
// with psql's \ir, so the file still runs with plain pg_prove:
//
//	BEGIN;
//	CREATE EXTENSION IF NOT EXISTS pgtap;
//	SELECT plan(N);
//	\ir fixture/fixture.sql
//
// It makes, for the session only and rolled back with the file (or kept
// to the session's end when a file commits its first transaction, as
// 15_policy does to run checks at other isolation levels):
//
//   - claims: every claim the file made, under a label (label, then
//     claim_next_job's columns, then the owner id; a batch keeps one row per
//     job under one label);
//   - pg_temp.claim_job(label, queue, owner DEFAULT 'worker-a'): claim_next_job
//     as the current role, kept in claims; the job id, or NULL;
//   - pg_temp.claim_jobs(label, queue, owner, n): claim_next_jobs, kept in
//     claims; how many were claimed;
//   - pg_temp.enqueue_and_claim(label, queue, owner, max_attempts DEFAULT 5,
//     payload DEFAULT {"fixture": label}): enqueue one job and claim it,
//     raising when the claim took another job; the job id;
//   - pg_temp.tally(queue, kind): the lease_outcome_tally count of kind
//     for queue, 0 when none.
//
// The fixture makes no assertion, so it adds nothing to a plan, and nothing
// in schema durable_jobs, so the coverage gate never counts it.
// TestPgTAPFixtureIsTheOnePlace holds these rules and fails when a file
// makes a table or function of the same name as one of the fixture's.
//
// TestPgTAP runs every file as its own parallel subtest in its own database
// cloned from the migrated template (internal/testdb), through
// `pg_prove --verbose`. A failing assertion, a plan that does not match, a
// missing plan, or any SKIP or TODO fails the subtest and prints pg_prove's
// output.
//
// To run one file by hand against a migrated database:
//
//	pg_prove --verbose --dbname "$DATABASE_URL" sql/tests/09_terminal_writes.sql
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
