package cli

import (
	"context"
	"errors"
	"flag"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/demo"
)

// demoAction is "leasectl demo": its flags, connection and exit codes.
// The demo itself is internal/demo.
var demoAction = &action{name: "demo", usage: help("demo"), noDatabase: true, flags: func(fs *flag.FlagSet) runFunc {
	var opts demo.Options
	fs.StringVar(&opts.DatabaseURL, "database-url", "",
		"existing database to play in (a role that may apply the bundle, create roles and create a schema); empty starts a throwaway PostgreSQL")
	fs.StringVar(&opts.HTMLPath, "html", "", "where to write the HTML timeline (default: a new file in the OS temp folder)")
	fs.BoolVar(&opts.Keep, "keep", false, "with --database-url: keep the run's schema, jobs and lease policies for inspection")
	return func(c *call) error {
		if opts.Keep && opts.DatabaseURL == "" {
			return usagef("--keep needs --database-url (the throwaway cluster is removed at the end)")
		}
		if opts.DatabaseURL != "" {
			// A URL that does not parse is refused here, with leasectl's
			// message that names the parameter at fault and nothing else.
			if _, err := parsePoolConfig(opts.DatabaseURL); err != nil {
				return failed("demo: connect to database", err)
			}
		}
		// The demo connects the way every leasectl command does, and a
		// failed connection is told without the login's or the database's
		// name.
		opts.Out = c.env.stdout
		opts.Connect = connectPool
		opts.ConnectError = goclient.ConnectError
		opts.Health = func(ctx context.Context, connString string) error {
			if code := healthAction.do(ctx, c.env, []string{"--database-url", connString}); code != exitOK {
				return errors.New("leasectl health failed (see above)")
			}
			return nil
		}
		began := time.Now()
		err := demo.Run(c.ctx, opts)
		if c.ctx.Err() != nil {
			return failed("demo", errors.New("interrupted; everything it started was stopped and removed"))
		}
		var demoErr *demo.Error
		if errors.As(err, &demoErr) {
			return failed("demo: "+demoErr.Step, demoErr.Err)
		}
		c.printf("\ndemo finished in %.1f s (wall clock)\n", time.Since(began).Seconds())
		return nil
	}
}}
