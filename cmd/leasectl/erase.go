package main

import (
	"context"
	"flag"
	"fmt"
)

var eraseUsage = help("erase")

// runErase is "leasectl erase".
func runErase(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("erase")
	common := addCommonFlags(fs, false)
	job := fs.Int64("job", 0, "the job's id (required)")
	reason := fs.String("reason", "", "the erasure request's ticket; kept in the control evidence (required)")
	record := addChangeRecordFlags(fs)
	if done, code := parseFlags(env, fs, eraseUsage, args); done {
		return code
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range []string{"job", "reason"} {
		if !given[name] {
			return env.usageError("erase: --%s is required", name)
		}
	}
	// Refused here first, with exit 2, also against a database older than
	// migration 014, which checked this reason for control characters only
	// (erase_job_payload refuses it with LF002 since).
	if looksPersonalOrSecret(*reason) {
		return env.usageError("erase: --reason %s", personalReasonProblem)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	erased, err := s.admin.ErasePayload(ctx, *job, record.change(*reason))
	if err != nil {
		return env.fail(fmt.Sprintf("erase payload of job %d", *job), err)
	}
	if !erased {
		printf(env.stdout, "job %d: nothing to erase (unknown job, or its payload is already erased)\n", *job)
		return exitOK
	}
	printf(env.stdout, "job %d: payload and result documents erased; lifecycle row kept\n", *job)
	return exitOK
}
