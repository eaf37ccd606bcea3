package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/demo"
)

const demoUsage = `Usage:
  leasectl demo [--html PATH] [--database-url URL [--keep]]

Plays three short stories with real goclient workers against PostgreSQL and
prints every lease event as it happens, stamped with the database's clock:

  1. a job that runs four times its lease keeps its one owner through
     renewals and completes once, while a second worker polls in vain;
  2. a worker that freezes (its heartbeat stops, its handler keeps running)
     loses its job to a second worker only after the database sees the lease
     expire; the frozen worker's late completion is refused with SQLSTATE
     LF001 and its target write is rolled back;
  3. an operator cancels a running job and the worker's handler is stopped
     within one renewal interval.

The demo checks each outcome in the database and exits 1 if one does not
hold. It ends with the "leasectl health" table and an evidence summary for
the run, and writes a self-contained HTML timeline of every lease (inline
CSS and SVG, nothing fetched) whose path it prints: --html PATH, or by
default a new file in the OS temp folder. It takes about 30 seconds.

Without --database-url the demo starts a throwaway PostgreSQL from the
server binaries on this machine and stops and removes it at the end, also
on Ctrl-C (SIGINT), SIGTERM and SIGHUP.

With --database-url it uses that database: it applies the bundle when the
database has none, uses queues of its own (demo.<random>.*) with their own
lease policy (recorded as control evidence, as every policy change is), and
leaves other queues and data alone. The URL's role must be able to apply
the bundle, create roles and create a schema (the bundle owner, or a
superuser). The demo makes:

  - a worker, a producer and an operator login role
    (leasefence_demo_<random>_worker, ...), each granted only its runtime
    role, with a random password that is sent only as a SCRAM-SHA-256
    verifier and that expires 5 minutes after it was made (VALID UNTIL);
  - a schema of its own, leasefence_demo_<random>, which no other role may
    create objects in, with the table its workers write their target rows
    to. It writes to no object it did not make in this run (a schema of
    that name that already exists stops the demo), and its SQL names every
    object with its schema.

At the end, also on Ctrl-C, SIGTERM and SIGHUP, it drops the login roles and
its schema and deletes its queues' jobs (with their payloads and outcomes),
lease policies and outcome tallies. What stays in the database: the
control-evidence records of its three policy changes and of their removal
(the evidence table is append-only, by design; they name the login that
made each change), the
job id counter, which has moved on, and the bundle, when the demo applied it
to a database that had none. When the --database-url role may not delete
from the bundle's tables, the jobs, policies and tallies stay too, and the
demo says so. With --keep the schema, the jobs, the policies and the tallies
stay, for inspection; the login roles are dropped all the same. Killed
outright (SIGKILL), the demo cleans up nothing: everything stays, the login
roles too, until someone drops them, but their passwords expire (which locks
them out where the server asks for a password, not under trust or peer
authentication).

The demo prints no claim token, owner id, payload, password or URL.
`

// runDemo is "leasectl demo": its flags, connection and exit codes. The
// demo itself is internal/demo.
func runDemo(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("demo")
	opts := demo.Options{Out: env.stdout}
	fs.StringVar(&opts.DatabaseURL, "database-url", "",
		"existing database to play in (a role that may apply the bundle, create roles and create a schema); empty starts a throwaway PostgreSQL")
	fs.StringVar(&opts.HTMLPath, "html", "", "where to write the HTML timeline (default: a new file in the OS temp folder)")
	fs.BoolVar(&opts.Keep, "keep", false, "with --database-url: keep the run's schema, jobs and lease policies for inspection")
	if done, code := parseFlags(env, fs, demoUsage, args); done {
		return code
	}
	if opts.Keep && opts.DatabaseURL == "" {
		return env.usageError("demo: --keep needs --database-url (the throwaway cluster is removed at the end)")
	}
	if opts.DatabaseURL != "" {
		// A URL that does not parse is refused here, with leasectl's
		// message that names the parameter at fault and nothing else.
		if _, err := parsePoolConfig(opts.DatabaseURL); err != nil {
			return env.fail("demo: connect to database", err)
		}
	}
	// The demo connects the way every leasectl command does, and a failed
	// connection is told without the login's or the database's name.
	opts.Connect = connectPool
	opts.ConnectError = goclient.ConnectError
	opts.Health = func(ctx context.Context, connString string) error {
		if code := runHealth(ctx, env, []string{"--database-url", connString}); code != exitOK {
			return errors.New("leasectl health failed (see above)")
		}
		return nil
	}
	began := time.Now()
	err := demo.Run(ctx, opts)
	if ctx.Err() != nil {
		fmt.Fprintln(env.stderr, "error: demo: interrupted; everything it started was stopped and removed")
		return exitError
	}
	var demoErr *demo.Error
	if errors.As(err, &demoErr) {
		return env.fail("demo: "+demoErr.Step, demoErr.Err)
	}
	printf(env.stdout, "\ndemo finished in %.1f s (wall clock)\n", time.Since(began).Seconds())
	return exitOK
}
