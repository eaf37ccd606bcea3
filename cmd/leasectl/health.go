package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

var healthUsage = help("health")

// healthJSON is one queue's health in JSON output.
type healthJSON struct {
	Queue                  string   `json:"queue"`
	RunningJobs            int64    `json:"running_jobs"`
	ExpiringWithinInterval int64    `json:"expiring_within_interval"`
	ExpiredAwaitingReclaim int64    `json:"expired_awaiting_reclaim"`
	ReclaimsLastHour       int64    `json:"reclaims_last_hour"`
	FailoverReclaims       int64    `json:"failover_reclaims_last_hour"`
	StaleRenewalsLastHour  int64    `json:"stale_renewals_last_hour"`
	StaleReleasesLastHour  int64    `json:"stale_releases_last_hour"`
	OldestLeaseAgeSeconds  *float64 `json:"oldest_lease_age_seconds"`
	DatabaseTime           string   `json:"database_time"`
	// The queue's backlog (queue_backlog).
	QueuedJobs          int64    `json:"queued_jobs"`
	RetryScheduledJobs  int64    `json:"retry_scheduled_jobs"`
	FailedLastHour      int64    `json:"failed_last_hour"`
	OldestDueAgeSeconds *float64 `json:"oldest_due_age_seconds"`
}

// runHealth is "leasectl health".
func runHealth(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("health")
	common := addCommonFlags(fs, true)
	if done, code := parseFlags(env, fs, healthUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("health: %s", err)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	health, err := s.admin.LeaseHealth(ctx)
	if err != nil {
		return env.fail("read lease health", err)
	}
	server, err := s.admin.ServerAvailability(ctx)
	if err != nil {
		return env.fail("read the server's availability", err)
	}
	backlog, err := s.admin.QueueBacklog(ctx)
	if err != nil {
		return env.fail("read the backlog", err)
	}
	if common.json() {
		byQueue := map[string]goclient.QueueBacklog{}
		for _, b := range backlog {
			byQueue[b.Queue] = b
		}
		out := make([]healthJSON, 0, len(health))
		for _, h := range health {
			out = append(out, toHealthJSON(h, byQueue[h.Queue]))
		}
		_ = writeJSON(env.stdout, out)
		return exitOK
	}
	tw := newTable(env.stdout)
	printf(tw, "QUEUE\tRUNNING\tEXPIRING SOON\tAWAITING RECLAIM\tRECLAIMS 1H\tFAILOVER 1H\tSTALE 1H\tSTALE RELEASES 1H\tOLDEST LEASE\n")
	for _, h := range health {
		printf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", h.Queue, h.RunningJobs, h.ExpiringWithinInterval,
			h.ExpiredAwaitingReclaim, h.ReclaimsLastHour, h.FailoverReclaimsLastHour, h.StaleRenewalsLastHour,
			h.StaleReleasesLastHour, oldestLease(h))
	}
	_ = tw.Flush()
	if len(health) > 0 {
		printf(env.stdout, "read at %s (database time)\n", textfmt.Time(health[0].DatabaseTime))
	}
	printf(env.stdout, "\n%s\n\n", serverLine(server))
	tw = newTable(env.stdout)
	printf(tw, "QUEUE\tQUEUED\tRUNNING\tRETRY SCHEDULED\tFAILED 1H\tOLDEST DUE\n")
	for _, b := range backlog {
		printf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", b.Queue, b.Queued, b.Running, b.RetryScheduled, b.FailedLastHour,
			optionalAge(b.OldestDueAge))
	}
	_ = tw.Flush()
	if len(backlog) > 0 {
		printf(env.stdout, "backlog read at %s (database time)\n", textfmt.Time(backlog[0].DatabaseTime))
	}
	return exitOK
}

// toHealthJSON is one queue's health and backlog as JSON output shows
// them; the oldest lease age is null when no lease is running, the oldest
// due age when no job is due.
func toHealthJSON(h goclient.QueueLeaseHealth, b goclient.QueueBacklog) healthJSON {
	out := healthJSON{
		Queue:                  h.Queue,
		RunningJobs:            h.RunningJobs,
		ExpiringWithinInterval: h.ExpiringWithinInterval,
		ExpiredAwaitingReclaim: h.ExpiredAwaitingReclaim,
		ReclaimsLastHour:       h.ReclaimsLastHour,
		FailoverReclaims:       h.FailoverReclaimsLastHour,
		StaleRenewalsLastHour:  h.StaleRenewalsLastHour,
		StaleReleasesLastHour:  h.StaleReleasesLastHour,
		DatabaseTime:           textfmt.Time(h.DatabaseTime),
		QueuedJobs:             b.Queued,
		RetryScheduledJobs:     b.RetryScheduled,
		FailedLastHour:         b.FailedLastHour,
		OldestLeaseAgeSeconds:  optionalSeconds(h.OldestLeaseAge),
		OldestDueAgeSeconds:    optionalSeconds(b.OldestDueAge),
	}
	return out
}

// optionalSeconds is d in seconds, or nil when there is none.
func optionalSeconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := seconds(*d)
	return &s
}

// oldestLease prints the oldest lease age rounded to milliseconds, or "-".
func oldestLease(h goclient.QueueLeaseHealth) string {
	return optionalAge(h.OldestLeaseAge)
}

// optionalAge prints an age rounded to milliseconds, or "-" when there is
// none.
func optionalAge(d *time.Duration) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprint(d.Round(time.Millisecond))
}

// serverLine says which WAL timeline the server writes on, since when the
// bundle has seen it and the one before, and when the server started; on
// a standby, that it is one.
func serverLine(s goclient.ServerAvailability) string {
	started := textfmt.Time(s.StartedAt)
	if s.InRecovery {
		return "server: a standby (in recovery), started at " + started
	}
	line := fmt.Sprintf("server: timeline %d, seen since %s", s.Timeline, textfmt.Time(s.TimelineSeenAt))
	if s.PreviousTimeline != 0 {
		line += fmt.Sprintf(" (after timeline %d: a promotion or a recovery)", s.PreviousTimeline)
	}
	return line + ", started at " + started
}
