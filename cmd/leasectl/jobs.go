package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

var jobsUsage = help("jobs")

// jobShowJSON is the JSON output of jobs show: the job and its action trail.
type jobShowJSON struct {
	goclient.JobView
	Actions []goclient.JobAction `json:"actions"`
}

// defaultJobsLimit is the page size of jobs list without --limit.
const defaultJobsLimit = 50

// runJobs is "leasectl jobs".
func runJobs(ctx context.Context, env *cliEnv, args []string) int {
	name, rest, done, code := readAction(env, "jobs", jobsUsage, args, "list", "show", "cancel", "replay")
	if done {
		return code
	}
	if name == "list" {
		return jobsList(ctx, env, rest)
	}
	return jobsOne(ctx, env, name, rest)
}

// optionalTime prints t, or "-" when there is none.
func optionalTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return textfmt.Time(*t)
}

// optionalText prints s, or "-" when there is none.
func optionalText(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// jobsListJSON is the JSON output of jobs list.
type jobsListJSON struct {
	Jobs []goclient.JobView `json:"jobs"`
	// NextAfter is the --after value of the next page; null when this page
	// was not full (there is no older job).
	NextAfter *int64 `json:"next_after"`
}

func jobsList(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("jobs list")
	common := addCommonFlags(fs, true)
	queue := fs.String("queue", "", "only jobs of this queue")
	status := fs.String("status", "", "only jobs in this status: QUEUED, RUNNING, RETRY_SCHEDULED, SUCCEEDED, FAILED or CANCELLED")
	after := fs.Int64("after", 0, "only jobs older than this job id (the last id of the previous page)")
	limit := fs.Int("limit", defaultJobsLimit, "page size, 1 to 1000")
	if done, code := parseFlags(env, fs, jobsUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("jobs list: %s", err)
	}

	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	jobs, err := s.admin.Jobs(ctx, goclient.JobFilter{Queue: *queue, Status: strings.ToUpper(*status), After: *after, Limit: *limit})
	if err != nil {
		return env.fail("list jobs", err)
	}
	var next *int64
	if len(jobs) == *limit {
		next = &jobs[len(jobs)-1].ID
	}
	if common.json() {
		_ = writeJSON(env.stdout, jobsListJSON{Jobs: jobs, NextAfter: next})
		return exitOK
	}
	tw := newTable(env.stdout)
	printf(tw, "ID\tQUEUE\tSTATUS\tATTEMPT\tGENERATION\tLEASE EXPIRES\tRENEWALS\tREASON\tCHANGED AT\n")
	for _, j := range jobs {
		printf(tw, "%d\t%s\t%s\t%d/%d\t%d\t%s\t%d\t%s\t%s\n", j.ID, j.Queue, j.Status, j.Attempt, j.MaxAttempts,
			j.FencingGeneration, optionalTime(j.LeaseExpiresAt), j.RenewalCount, optionalText(j.FailureReasonCode),
			textfmt.Time(j.StatusChangedAt))
	}
	_ = tw.Flush()
	if next != nil {
		printf(env.stdout, "next page: --after %d\n", *next)
	}
	return exitOK
}

// errJobNotFound is an unknown job id.
var errJobNotFound = errors.New("no such job")

// jobsOne is "jobs show|cancel|replay ID".
func jobsOne(ctx context.Context, env *cliEnv, action string, args []string) int {
	name := "jobs " + action
	fs := newFlagSet(name)
	common := addCommonFlags(fs, true)
	var reason *string
	var record changeRecordFlags
	if action != "show" {
		reason = fs.String("reason", "", "why; kept in the job's action trail and the control evidence (required)")
		record = addChangeRecordFlags(fs)
	}
	positional, done, code := parseArgs(env, fs, jobsUsage, args)
	if done {
		return code
	}
	switch {
	case len(positional) == 0:
		return env.usageError("%s: say which job: leasectl %s ID", name, name)
	case len(positional) > 1:
		return env.usageError("%s: unexpected argument %q", name, positional[1])
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("%s: %s", name, err)
	}
	if reason != nil && *reason == "" {
		return env.usageError("%s: --reason is required", name)
	}
	if reason != nil && looksPersonalOrSecret(*reason) {
		return env.usageError("%s: --reason %s", name, personalReasonProblem)
	}
	idArg := positional[0]
	id, err := strconv.ParseInt(idArg, 10, 64)
	if err != nil {
		return env.usageError("%s: job id %q is not a number", name, idArg)
	}

	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	doing := fmt.Sprintf("%s job %d", action, id)
	var changed bool
	if action != "show" {
		change := record.change(*reason)
		changed, err = map[string]func(context.Context, int64, goclient.ChangeRecord) (bool, error){
			"cancel": s.admin.Cancel, "replay": s.admin.Replay}[action](ctx, id, change)
	}
	if err != nil {
		return env.fail(doing, err)
	}
	job, err := s.admin.Job(ctx, id)
	if errors.Is(err, goclient.ErrJobNotFound) {
		err = errJobNotFound
	}
	if err != nil {
		return env.fail(doing, err)
	}
	if action != "show" && !changed {
		want := "QUEUED, RETRY_SCHEDULED or RUNNING"
		if action == "replay" {
			want = "FAILED or CANCELLED"
		}
		return env.fail(doing, fmt.Errorf("the job is %s; only %s jobs can be %s, so nothing changed",
			job.Status, want, map[string]string{"cancel": "cancelled", "replay": "replayed"}[action]))
	}
	if action != "show" {
		if common.json() {
			_ = writeJSON(env.stdout, job)
			return exitOK
		}
		if action == "replay" {
			printf(env.stdout, "job %d is %s and due at once: run after %s, attempt %d of %d next\n",
				job.ID, job.Status, textfmt.Time(job.RunAfter), job.Attempt+1, job.MaxAttempts)
			return exitOK
		}
		printf(env.stdout, "job %d is %s\n", job.ID, job.Status)
		return exitOK
	}
	actions, err := s.admin.JobActions(ctx, id)
	if err != nil {
		return env.fail(doing, err)
	}
	if common.json() {
		_ = writeJSON(env.stdout, jobShowJSON{JobView: job, Actions: actions})
		return exitOK
	}
	tw := newTable(env.stdout)
	for _, field := range [][2]string{
		{"job", strconv.FormatInt(job.ID, 10)},
		{"queue", job.Queue},
		{"status", job.Status},
		{"attempt", fmt.Sprintf("%d of %d", job.Attempt, job.MaxAttempts)},
		{"fencing generation", strconv.FormatInt(job.FencingGeneration, 10)},
		{"lease expires", optionalTime(job.LeaseExpiresAt)},
		{"renewals", strconv.FormatInt(job.RenewalCount, 10)},
		{"failure reason", optionalText(job.FailureReasonCode)},
		{"run after", textfmt.Time(job.RunAfter)},
		{"created", textfmt.Time(job.CreatedAt)},
		{"status changed", textfmt.Time(job.StatusChangedAt)},
	} {
		printf(tw, "%s:\t%s\n", field[0], field[1])
	}
	for _, a := range actions {
		printf(tw, "%s:\t%s by %s: %s (ticket %s, approver %s)\n", a.Kind, textfmt.Time(a.At), a.By,
			optionalText(a.Reason), optionalText(a.Ticket), optionalText(a.Approver))
	}
	_ = tw.Flush()
	return exitOK
}
