package main

import (
	"context"
	"flag"

	"github.com/mightyetl/leasefence/goclient"
)

const deploymentUsage = `Usage:
  leasectl deployment record --version V --source COMMIT|DIGEST --deployed-by HANDLE
                             --ticket TICKET --reason TEXT [--output text|json] [--database-url URL]

Records that version V of your application was deployed against this
database as append-only control evidence, through the database function
record_deployment. It shows up in "leasectl evidence". Every flag is
required, and the database checks each:

  --version      ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$ (1.4.2, 2026.05.09+build.7)
  --source       the commit (40 or 64 lowercase hex digits) or artifact
                 digest (sha256:<64 hex digits>) it was built from
  --deployed-by  the person who deployed, a directory handle matching
                 ^[a-z][a-z0-9._-]{0,62}$ (not a shared role, a name or e-mail)
  --ticket       the change ticket, ^[A-Z][A-Z0-9]+-[0-9]+$ (REL-42)
  --reason       a short reason, at most 500 characters; refused when it
                 looks like personal data or a secret (evidence is kept)

A value that does not fit is refused with LF002 and nothing is recorded.
Run it from the deploying pipeline, as the database role that applied the
bundle with "leasectl migrate up": only that role may execute
record_deployment (no runtime role can).
`

// runDeployment is "leasectl deployment".
func runDeployment(ctx context.Context, env *cliEnv, args []string) int {
	_, rest, done, code := readAction(env, "deployment", deploymentUsage, args, "record")
	if done {
		return code
	}
	fs := newFlagSet("deployment record")
	common := addCommonFlags(fs, true)
	var d goclient.Deployment
	fs.StringVar(&d.Version, "version", "", "deployed application version (required)")
	fs.StringVar(&d.Source, "source", "", "commit or artifact digest it was built from (required)")
	fs.StringVar(&d.DeployedBy, "deployed-by", "", "handle of the person who deployed (required)")
	fs.StringVar(&d.Ticket, "ticket", "", "change ticket, e.g. REL-42 (required)")
	fs.StringVar(&d.Reason, "reason", "", "short reason (required)")
	if done, code := parseFlags(env, fs, deploymentUsage, rest); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("deployment record: %s", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range []string{"version", "source", "deployed-by", "ticket", "reason"} {
		if !given[name] {
			return env.usageError("deployment record: --version, --source, --deployed-by, --ticket and --reason are required")
		}
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	if err := s.admin.RecordDeployment(ctx, d); err != nil {
		return env.fail("record deployment", err)
	}
	if common.json() {
		_ = writeJSON(env.stdout, map[string]any{"deployment_version": d.Version, "source_digest": d.Source,
			"deployed_by": d.DeployedBy, "recorded": true})
		return exitOK
	}
	printf(env.stdout, "recorded deployment version %s\n", d.Version)
	return exitOK
}
