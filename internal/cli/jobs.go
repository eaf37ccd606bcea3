package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

// jobShowJSON is the JSON output of jobs show: the job and its action trail.
type jobShowJSON struct {
	goclient.JobView
	Actions []goclient.JobAction `json:"actions"`
}

// defaultJobsLimit is the page size of jobs list without --limit.
const defaultJobsLimit = 50

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

// jobsList is "leasectl jobs list".
var jobsList = &action{name: "jobs list", output: true, flags: func(fs *flag.FlagSet) runFunc {
	var filter goclient.JobFilter
	fs.StringVar(&filter.Queue, "queue", "", "only jobs of this queue")
	fs.StringVar(&filter.Status, "status", "", "only jobs in this status: QUEUED, RUNNING, RETRY_SCHEDULED, SUCCEEDED, FAILED or CANCELLED")
	fs.Int64Var(&filter.After, "after", 0, "only jobs older than this job id (the last id of the previous page)")
	fs.IntVar(&filter.Limit, "limit", defaultJobsLimit, "page size, 1 to 1000")
	return func(c *call) error {
		filter.Status = strings.ToUpper(filter.Status)
		a, err := c.openAdmin()
		if err != nil {
			return err
		}
		jobs, err := a.Jobs(c.ctx, filter)
		if err != nil {
			return failed("list jobs", err)
		}
		var next *int64
		if len(jobs) == filter.Limit {
			next = &jobs[len(jobs)-1].ID
		}
		return c.print(jobsListJSON{Jobs: jobs, NextAfter: next}, func() {
			table(c.env.stdout, "ID\tQUEUE\tSTATUS\tATTEMPT\tGENERATION\tLEASE EXPIRES\tRENEWALS\tREASON\tCHANGED AT",
				jobs, func(j goclient.JobView) []any {
					return []any{j.ID, j.Queue, j.Status, fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts), j.FencingGeneration,
						optionalTime(j.LeaseExpiresAt), j.RenewalCount, optionalText(j.FailureReasonCode), textfmt.Time(j.StatusChangedAt)}
				})
			if next != nil {
				c.printf("next page: --after %d\n", *next)
			}
		})
	}
}}

// errJobNotFound is an unknown job id.
var errJobNotFound = errors.New("no such job")

// readJob reads one job; an unknown id is errJobNotFound.
func readJob(c *call, a *goclient.Admin, doing string) (goclient.JobView, error) {
	job, err := a.Job(c.ctx, c.id)
	if errors.Is(err, goclient.ErrJobNotFound) {
		err = errJobNotFound
	}
	return job, failed(doing, err)
}

// jobsShow is "leasectl jobs show ID": the job and its action trail.
var jobsShow = &action{name: "jobs show", output: true, arg: "job", run: func(c *call) error {
	doing := fmt.Sprintf("show job %d", c.id)
	a, err := c.openAdmin()
	if err != nil {
		return err
	}
	job, err := readJob(c, a, doing)
	if err != nil {
		return err
	}
	actions, err := a.JobActions(c.ctx, c.id)
	if err != nil {
		return failed(doing, err)
	}
	return c.print(jobShowJSON{JobView: job, Actions: actions}, func() {
		tw := newTable(c.env.stdout)
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
	})
}}

// jobsChange is the action "leasectl jobs VERB ID" that changes one job
// with change: from names the statuses it changes, done is its verb's past
// tense. Its --reason must be given and not empty.
func jobsChange(verb string, change func(*goclient.Admin, context.Context, int64, goclient.ChangeRecord) (bool, error),
	from, done string) *action {
	return &action{name: "jobs " + verb, output: true, arg: "job", required: []string{"reason"}, flags: func(fs *flag.FlagSet) runFunc {
		record := addChangeFlags(fs, "why; kept in the job's action trail and the control evidence (required)")
		return func(c *call) error {
			if err := record.requireReason(); err != nil {
				return err
			}
			if err := record.checkPersonal(); err != nil {
				return err
			}
			doing := fmt.Sprintf("%s job %d", verb, c.id)
			a, err := c.openAdmin()
			if err != nil {
				return err
			}
			changed, err := change(a, c.ctx, c.id, record.record())
			if err != nil {
				return failed(doing, err)
			}
			job, err := readJob(c, a, doing)
			if err != nil {
				return err
			}
			if !changed {
				return failed(doing, fmt.Errorf("the job is %s; only %s jobs can be %s, so nothing changed", job.Status, from, done))
			}
			return c.print(job, func() {
				if verb == "replay" {
					c.printf("job %d is %s and due at once: run after %s, attempt %d of %d next\n",
						job.ID, job.Status, textfmt.Time(job.RunAfter), job.Attempt+1, job.MaxAttempts)
					return
				}
				c.printf("job %d is %s\n", job.ID, job.Status)
			})
		}
	}}
}

// jobsCancel and jobsReplay are "leasectl jobs cancel|replay ID".
var (
	jobsCancel = jobsChange("cancel", (*goclient.Admin).Cancel, "QUEUED, RETRY_SCHEDULED or RUNNING", "cancelled")
	jobsReplay = jobsChange("replay", (*goclient.Admin).Replay, "FAILED or CANCELLED", "replayed")
)
