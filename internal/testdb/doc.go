// Package testdb gives every test its own real PostgreSQL database with the
// leasefence bundle already applied.
//
// # Overview
//
// A test binary that uses testdb starts from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }
//
// and each test asks for a database:
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		db := testdb.New(t)                                  // dropped when the test ends
//		admin := db.Pool(t)                                  // superuser pool
//		worker := db.LoginPool(t, "durable_job_worker")      // a fresh login role in that group
//		...
//	}
//
// # How it works
//
// The first New in a test binary prepares one server for the whole binary
// (later calls wait for it):
//
//  1. The server is the one named by LEASEFENCE_TEST_DATABASE_URL (a
//     superuser URL to an existing server), or else a throwaway cluster
//     started with internal/pglocal from the machine's PostgreSQL binaries,
//     with the speed settings fsync=off, synchronous_commit=off,
//     full_page_writes=off, and the plpgsql_check extension preloaded with
//     its profiler on (for the SQL coverage gate), max_connections=300.
//     initdb's output is kept in the user's cache folder
//     (leasefence/pglocal-initdb), so later binaries copy it instead of
//     running initdb again.
//  2. A template database, leasefence_template, gets the bundle through
//     sqlbundle.Apply, plus the pgtap and plpgsql_check extensions in schema
//     public (the bundle lives in schema durable_jobs), and is marked as a
//     template.
//  3. New runs CREATE DATABASE ... TEMPLATE leasefence_template. PostgreSQL
//     refuses two copies of one template at the same moment, so these calls
//     take turns; everything else runs in parallel.
//
// Run stops the throwaway cluster when the tests are done (pglocal also
// removes it if the binary is interrupted, panics or is killed).
//
// Cluster-wide objects (the bundle's roles) are shared by every database
// of the server. A test that must change them, drop them (migrate down
// --drop-roles) or restart the server uses OwnCluster, which gives it a
// server of its own.
//
// # PostgreSQL in Docker
//
// On a machine with a Docker engine but no PostgreSQL 15 binaries, set
// LEASEFENCE_TEST_DOCKER=1: the server is then a container (run through
// github.com/ory/dockertest) of an image testdb builds once from
// postgres:15-bookworm with pgTAP and plpgsql_check added, started with the
// same settings as a local cluster and removed when the binary ends. Only
// the value 1 selects it; local binaries stay the default, and
// LEASEFENCE_TEST_DATABASE_URL, when set, wins over both. OwnCluster still
// needs local binaries, and the pgTAP suite still runs pg_prove and psql
// locally. Without an engine, New fails with a message naming the variable
// and the two alternatives (TestDockerSelectedWithoutEngineSaysWhatToDo).
//
// # Missing tools
//
// Nothing is ever skipped. When PostgreSQL, pgTAP or plpgsql_check is
// missing, New fails the test with a message that says to run make deps and
// which packages that installs.
package testdb
