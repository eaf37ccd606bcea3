package cli

import (
	"fmt"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

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

// healthAction is "leasectl health".
var healthAction = &action{name: "health", usage: help("health"), output: true, run: func(c *call) error {
	health, err := get(c, "read lease health", (*goclient.Admin).LeaseHealth)
	if err != nil {
		return err
	}
	server, err := get(c, "read the server's availability", (*goclient.Admin).ServerAvailability)
	if err != nil {
		return err
	}
	backlog, err := get(c, "read the backlog", (*goclient.Admin).QueueBacklog)
	if err != nil {
		return err
	}
	byQueue := map[string]goclient.QueueBacklog{}
	for _, b := range backlog {
		byQueue[b.Queue] = b
	}
	out := make([]healthJSON, 0, len(health))
	for _, h := range health {
		out = append(out, toHealthJSON(h, byQueue[h.Queue]))
	}
	return c.print(out, func() {
		table(c.env.stdout, "QUEUE\tRUNNING\tEXPIRING SOON\tAWAITING RECLAIM\tRECLAIMS 1H\tFAILOVER 1H\tSTALE 1H\tSTALE RELEASES 1H\tOLDEST LEASE",
			health, func(h goclient.QueueLeaseHealth) []any {
				return []any{h.Queue, h.RunningJobs, h.ExpiringWithinInterval, h.ExpiredAwaitingReclaim, h.ReclaimsLastHour,
					h.FailoverReclaimsLastHour, h.StaleRenewalsLastHour, h.StaleReleasesLastHour, optionalAge(h.OldestLeaseAge)}
			})
		if len(health) > 0 {
			c.printf("read at %s (database time)\n", textfmt.Time(health[0].DatabaseTime))
		}
		c.printf("\n%s\n\n", serverLine(server))
		table(c.env.stdout, "QUEUE\tQUEUED\tRUNNING\tRETRY SCHEDULED\tFAILED 1H\tOLDEST DUE", backlog, func(b goclient.QueueBacklog) []any {
			return []any{b.Queue, b.Queued, b.Running, b.RetryScheduled, b.FailedLastHour, optionalAge(b.OldestDueAge)}
		})
		if len(backlog) > 0 {
			c.printf("backlog read at %s (database time)\n", textfmt.Time(backlog[0].DatabaseTime))
		}
	})
}}

// toHealthJSON is one queue's health and backlog as JSON output shows
// them; the oldest lease age is null when no lease is running, the oldest
// due age when no job is due.
func toHealthJSON(h goclient.QueueLeaseHealth, b goclient.QueueBacklog) healthJSON {
	return healthJSON{
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
}

// optionalSeconds is d in seconds, or nil when there is none.
func optionalSeconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	return new(d.Seconds())
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
