package main

import (
	"context"
	"flag"

	"github.com/mightyetl/leasefence/goclient"
)

var deploymentUsage = help("deployment")

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
