package goclient

import (
	"context"
	"time"
)

// ServerAvailability is what the database says of its own server: the WAL
// timeline it writes on (a promotion starts a new one), since when the
// bundle has seen it, and when the server last started. Timelines and
// times only: no job, owner or login.
type ServerAvailability struct {
	// Timeline is the WAL timeline the server writes on; 0 on a standby,
	// where recovery hides it.
	Timeline int64
	// TimelineSeenAt is when the bundle first saw the timeline it last
	// recorded: at the migration that began recording (031), or at the
	// first health read, metrics scrape or evidence report after a promotion.
	TimelineSeenAt time.Time
	// PreviousTimeline is the timeline seen before that one, or 0 when
	// the bundle has seen only one.
	PreviousTimeline int64
	// StartedAt is when the server's postmaster started
	// (pg_postmaster_start_time()).
	StartedAt time.Time
	// InRecovery is true on a standby.
	InRecovery bool
	// DatabaseTime is the database clock when it was read.
	DatabaseTime time.Time
}

const sqlServerAvailability = `SELECT COALESCE(server_timeline, 0), timeline_seen_at, COALESCE(previous_timeline, 0),
	server_started_at, in_recovery, database_time FROM durable_jobs.server_availability()`

// ServerAvailability reads the server's timeline and start time through
// durable_jobs.server_availability() (migration 031; auditor role). On a
// primary, the first read after a promotion or a restart records it as
// chained control evidence (server_timeline_changed or server_restarted),
// so an incident's timeline shows the failover; a read-only transaction or
// a standby records nothing.
func (a *Admin) ServerAvailability(ctx context.Context) (ServerAvailability, error) {
	var s ServerAvailability
	err := a.pool.QueryRow(ctx, sqlServerAvailability).Scan(&s.Timeline, &s.TimelineSeenAt, &s.PreviousTimeline,
		&s.StartedAt, &s.InRecovery, &s.DatabaseTime)
	return s, translateError(err)
}
