package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/demo"
)

var demoUsage = help("demo")

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
