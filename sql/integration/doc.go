// Package sqlintegration holds Go integration tests of leasefence's SQL
// bundle: the lease contract of docs/sql-api.md, exercised through its
// function calls only, against a real PostgreSQL server.
//
// # Overview
//
// The pgTAP files in sql/tests check each function inside one rolled-back
// transaction. Some promises can only be checked from more than one session:
// a renewal that waits on a worker's open success transaction, a cancel that
// commits while a heartbeat is blocked, two replicas claiming at the same
// instant, a reclaim racing the old owner's renewal. This package checks them
// with two (or more) real connections, each its own database session and,
// where the test needs it, its own login role:
//
//	session A: BEGIN; complete_job(...)     -- holds the job row lock
//	session B: renew_job_lease(...)         -- waits for A (checked in pg_locks)
//	session A: COMMIT
//	session B: sees 'stale'; the job stays SUCCEEDED
//
// # What is covered
//
// The seed's reality-based test requirements 1-8, 10, 15 and 16 (one long
// execution singly owned through renewals; concurrent replicas; reclaim only
// after database-observed expiry; expired tokens; cancel, success, retry and
// failure before renewal; superseded tokens; unsafe policy intervals; stolen,
// foreign and replayed tokens; no payload access on the renewal path), and
// the bundle's migration round trip: down to version 0 and up again gives the
// same schema, and up on an up-to-date database changes nothing.
//
// # Running
//
//	go test -race -count=1 ./sql/integration/
//
// Each test gets its own database cloned from a migrated template
// (internal/testdb) and its own queue with a 1 second lease, so the tests run
// in parallel. Expiry is always the database's clock: the tests wait for
// clock_timestamp() to pass an expiry, they never fake time.
package sqlintegration
