package goclient

import "time"

// QueueBacklog is what waits, runs and failed lately on one queue, at one
// database time (durable_jobs.queue_backlog, migration 028). Every field
// is a count or a duration: no job ids, owners or payloads.
type QueueBacklog struct {
	// Queue is the queue name ("*" for the default policy's row).
	Queue string
	// Queued is how many jobs are QUEUED, due or scheduled later.
	Queued int64
	// Running is how many jobs are RUNNING, expired leases included.
	Running int64
	// RetryScheduled is how many jobs are RETRY_SCHEDULED, due or not.
	RetryScheduled int64
	// FailedLastHour is how many jobs became FAILED in the last hour (and
	// still are).
	FailedLastHour int64
	// OldestDueAge is how long the oldest due QUEUED or RETRY_SCHEDULED
	// job has been due (DatabaseTime minus its run-after), or nil when no
	// job of the queue is due.
	OldestDueAge *time.Duration
	// DatabaseTime is the database time the backlog was read at.
	DatabaseTime time.Time
}
