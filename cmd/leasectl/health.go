package main

import (
	"context"
	"fmt"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/textfmt"
)

const healthUsage = `Usage:
  leasectl health [--output text|json] [--database-url URL]

Shows lease health for every queue that has a policy or a job, read at one
database time from the auditor function lease_health_by_queue():

  RUNNING           jobs that are RUNNING (expired leases included)
  EXPIRING SOON     live leases that expire within one renewal interval
  AWAITING RECLAIM  RUNNING jobs whose lease has expired: their worker
                    stopped renewing and another worker may take them over
  RECLAIMS 1H       expired leases taken over in the last hour
  STALE 1H          renewals refused as stale in the last hour (queue "*"
                    counts those that named an unknown job or a job the
                    renewing login did not claim last)
  STALE RELEASES 1H releases refused as stale in the last hour (queue "*"
                    as for STALE 1H)
  OLDEST LEASE      age of the oldest running claim

Only counts and durations: no job id, owner, token or payload. Needs a login
granted durable_job_auditor (or durable_job_operator).
`

// healthJSON is one queue's health in JSON output.
type healthJSON struct {
	Queue                  string   `json:"queue"`
	RunningJobs            int64    `json:"running_jobs"`
	ExpiringWithinInterval int64    `json:"expiring_within_interval"`
	ExpiredAwaitingReclaim int64    `json:"expired_awaiting_reclaim"`
	ReclaimsLastHour       int64    `json:"reclaims_last_hour"`
	StaleRenewalsLastHour  int64    `json:"stale_renewals_last_hour"`
	StaleReleasesLastHour  int64    `json:"stale_releases_last_hour"`
	OldestLeaseAgeSeconds  *float64 `json:"oldest_lease_age_seconds"`
	DatabaseTime           string   `json:"database_time"`
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
	if common.json() {
		out := make([]healthJSON, 0, len(health))
		for _, h := range health {
			out = append(out, toHealthJSON(h))
		}
		_ = writeJSON(env.stdout, out)
		return exitOK
	}
	tw := newTable(env.stdout)
	printf(tw, "QUEUE\tRUNNING\tEXPIRING SOON\tAWAITING RECLAIM\tRECLAIMS 1H\tSTALE 1H\tSTALE RELEASES 1H\tOLDEST LEASE\n")
	for _, h := range health {
		printf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", h.Queue, h.RunningJobs, h.ExpiringWithinInterval,
			h.ExpiredAwaitingReclaim, h.ReclaimsLastHour, h.StaleRenewalsLastHour, h.StaleReleasesLastHour, oldestLease(h))
	}
	_ = tw.Flush()
	if len(health) > 0 {
		printf(env.stdout, "read at %s (database time)\n", textfmt.Time(health[0].DatabaseTime))
	}
	return exitOK
}

// toHealthJSON is one queue's health as JSON output shows it; the oldest
// lease age is null when no lease is running.
func toHealthJSON(h goclient.QueueLeaseHealth) healthJSON {
	out := healthJSON{
		Queue:                  h.Queue,
		RunningJobs:            h.RunningJobs,
		ExpiringWithinInterval: h.ExpiringWithinInterval,
		ExpiredAwaitingReclaim: h.ExpiredAwaitingReclaim,
		ReclaimsLastHour:       h.ReclaimsLastHour,
		StaleRenewalsLastHour:  h.StaleRenewalsLastHour,
		StaleReleasesLastHour:  h.StaleReleasesLastHour,
		DatabaseTime:           textfmt.Time(h.DatabaseTime),
	}
	if h.OldestLeaseAge != nil {
		age := seconds(*h.OldestLeaseAge)
		out.OldestLeaseAgeSeconds = &age
	}
	return out
}

// oldestLease prints the oldest lease age rounded to milliseconds, or "-".
func oldestLease(h goclient.QueueLeaseHealth) string {
	if h.OldestLeaseAge == nil {
		return "-"
	}
	return fmt.Sprint(h.OldestLeaseAge.Round(1e6))
}
