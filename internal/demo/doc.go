// Package demo is "leasectl demo": three short stories played with real
// goclient workers against PostgreSQL, every lease event printed as it
// happens with the database's clock, and a self-contained HTML timeline of
// every lease.
//
//  1. A job that runs four times its lease keeps its one owner through
//     renewals and completes once, while a second worker polls in vain.
//  2. A worker that freezes (its heartbeat stops, its handler keeps
//     running) loses its job to a second worker only after the database
//     sees the lease expire; its late completion is refused with SQLSTATE
//     LF001 and its target write rolled back.
//  3. An operator cancels a running job and the worker's handler is
//     stopped within one renewal interval.
//
// Run checks each outcome in the database and returns an *Error naming the
// step that failed. leasectl (internal/cli) is the only importer: it owns the flags,
// the connection of the demo's logins (Options.Connect), the health table
// (Options.Health), the message and the exit code; leasectl demo --help
// describes what the demo makes in a database and what it leaves there.
//
// Without a database URL the demo starts a throwaway PostgreSQL with
// internal/pglocal and removes it at the end, also when its context is
// cancelled. With one, it plays in queues, login roles and a schema of its
// own (demo.<random>.*, leasefence_demo_<random>) and drops or deletes them
// at the end unless Options.Keep.
//
// The demo prints no claim token, owner id, payload, password or URL.
package demo
