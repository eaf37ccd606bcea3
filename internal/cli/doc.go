// Package cli is leasectl's command line: its commands, their flags, the
// connection they open, their text and JSON output, and their exit codes.
// cmd/leasectl is the process around it (signals, os.Exit) and calls Run;
// its package doc is the user's overview of the commands and exit codes.
//
// What the commands do is in the packages they call: goclient.Admin (jobs,
// policies, retention, change control, proposals, deployments, health),
// sql (migrations: sqlbundle.Migrator and its plan), audit (the audit, the
// access review, the evidence anchor) and evidence (the report, its
// rendering and its export). This package holds no SQL and no rule of the
// product: it reads flags, makes one call per action, and prints.
//
// # Layout
//
//   - cli.go: Run, the table of commands, the exit codes and error lines.
//   - action.go: every command and action declared as data (its flags,
//     whether it takes --output and an id, its required flags, its run
//     func) and the one runner that parses, checks, connects, runs and
//     turns the result into an exit code.
//   - args.go: flags and positional arguments in any order, and choose,
//     which picks a command's action.
//   - help.go and help/*.txt: each command's usage, with what it names
//     (versions, roles, audit checks) filled in from the code.
//   - output.go: the one table printer, JSON and printf, through which
//     every text value from the database or an operator is shown escaped
//     (textfmt.Visible).
//   - one file per command (health.go, jobs.go, migrate.go, ...).
//
// Its tests are cmd/leasectl's: they build the leasectl binary with
// coverage of both packages and run it against real PostgreSQL, as a
// script would.
package cli
