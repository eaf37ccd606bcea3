package main

import (
	"context"
	"flag"
	"fmt"
)

const deploymentUsage = `Usage:
  leasectl deployment record --version V --reason TEXT [--output text|json] [--database-url URL]

Records that version V of your application was deployed against this
database, with a reason (a change ticket, a release note), as append-only
control evidence. It shows up in "leasectl evidence". V must match
^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$ (for example 1.4.2 or 2026.05.09+build.7);
the reason must not be blank (at most 500 characters).

Run it from the deploying pipeline, as the database role that applied the
bundle with "leasectl migrate up": only that role may execute
record_deployment_version (no runtime role can).
`

// runDeployment is "leasectl deployment".
func runDeployment(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 {
		return env.usageError("deployment: say record")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(env.stdout, deploymentUsage)
		return exitOK
	case "record":
	default:
		return env.usageError("deployment: unknown action %q (want record)", args[0])
	}
	fs := newFlagSet("deployment record")
	common := addCommonFlags(fs, true)
	version := fs.String("version", "", "deployed application version (required)")
	reason := fs.String("reason", "", "why, e.g. the change ticket (required)")
	if done, code := parseFlags(env, fs, deploymentUsage, args[1:]); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("deployment record: %s", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["version"] || !given["reason"] {
		return env.usageError("deployment record: --version and --reason are required")
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	if err := s.client.RecordDeploymentVersion(ctx, *version, *reason); err != nil {
		return env.fail("record deployment version", err)
	}
	if common.json() {
		_ = writeJSON(env.stdout, map[string]any{"deployment_version": *version, "recorded": true})
		return exitOK
	}
	printf(env.stdout, "recorded deployment version %s\n", *version)
	return exitOK
}
