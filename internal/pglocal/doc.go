// Package pglocal starts and stops a throwaway PostgreSQL cluster from the
// PostgreSQL binaries already installed on the machine.
//
// # Overview
//
// Tests, the demo and the benchmarks need a real PostgreSQL server that
// nobody else uses and that leaves nothing behind. Start creates one:
//
//	cluster, err := pglocal.Start(ctx, pglocal.Options{
//		Settings: map[string]string{"fsync": "off"}, // the caller's choice, not the default
//	})
//	if err != nil { ... }
//	defer cluster.Stop()
//	conn, err := pgx.Connect(ctx, cluster.URL("postgres"))
//
// The package knows nothing about leasefence's jobs: it only runs a server.
//
// # What Start does
//
//  1. It finds the server binaries (initdb, postgres) through Options.BinDir,
//     then `pg_config --bindir`, then an initdb on PATH, then the newest
//     /usr/lib/postgresql/<version>/bin. FindBinDir does only this step.
//  2. It makes a private temporary folder holding the data directory, the
//     server log and the folder for the server's unix socket.
//  3. It runs initdb with trust authentication (anyone who can reach the
//     server on 127.0.0.1 or the socket may log in as any role) and a C
//     locale.
//  4. It starts postgres listening on 127.0.0.1 only, on a free port it
//     picked, and waits until the server accepts connections.
//
// With Options.InitdbCache set, step 3 runs only once per PostgreSQL
// version and initdb options: its output is kept in that folder and later
// clusters start from a copy of it.
//
// PostgreSQL refuses to run as the operating-system superuser. When the
// caller is root, initdb and postgres run as an unprivileged account
// (Options.OSUser, else "nobody", else a system account "pglocal" that
// Start creates), and the temporary folder is handed over to it.
//
// # Cleaning up
//
// Stop shuts the server down (a fast shutdown, the same as
// `pg_ctl stop -m fast`, escalating to an immediate shutdown and then a
// kill if the server does not go) and removes every file. It is safe to
// call more than once.
//
// The files are removed even when the caller never reaches Stop:
//
//   - On SIGINT or SIGTERM a handler stops every running cluster and then
//     exits the process with status 128+signal (Options.NoSignalHandler
//     turns this off for programs that handle signals themselves; they must
//     call Stop).
//   - A small watcher process ("reaper") is started next to each server. It
//     waits on a pipe that only the calling process holds open. When the
//     calling process ends for any reason (a panic, a test timeout, a kill
//     -9), the pipe closes, and the watcher stops the server and deletes the
//     temporary folder.
package pglocal
