package goclient

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the admin port: the operator and auditor calls (lease policy,
// deployment evidence, lease health and control evidence), methods of
// Admin that a Client delegates to (admin.go). Like port_pg.go, it writes
// each statement once, as a constant directly above the method that runs
// it; these two files are the only places SQL text appears in goclient.
// Every call here is payload-blind: the functions it calls never
// return a payload, claim token, owner id, idempotency key or job id, so
// neither do these methods.

// LeasePolicy is the lease policy of one queue as the database holds it.
// The queue "*" is the default for queues without a policy of their own.
type LeasePolicy struct {
	// Queue is the queue name, or "*" for the default policy.
	Queue string
	// LeaseDuration is how long a claim or renewal grants, counted from the
	// database time of that claim or renewal.
	LeaseDuration time.Duration
	// RenewalInterval is how often a worker should renew (at most a third of
	// LeaseDuration).
	RenewalInterval time.Duration
	// MaxClaimLifetime caps how long renewals can keep one claim alive.
	MaxClaimLifetime time.Duration
	// RenewalEnabled is false when renewals are switched off: claims then run
	// out at the expiry they already have.
	RenewalEnabled bool
	// ChangedAt is the database time of the last change.
	ChangedAt time.Time
	// ChangedByRole is the database login role that made the last change.
	ChangedByRole string
}

// QueueLeaseHealth is the lease health of one queue at one database time.
// Every field is a count or a duration: no job ids, owners or payloads.
type QueueLeaseHealth struct {
	// Queue is the queue name. "*" collects the stale renewals and stale
	// releases not charged to a queue: those naming a job that does not
	// exist, and those by a login that did not make the job's last claim
	// (a guess cannot pass for the queue's trouble).
	Queue string
	// RunningJobs is how many jobs are RUNNING, expired leases included.
	RunningJobs int64
	// ExpiringWithinInterval is how many live leases expire within one
	// renewal interval of DatabaseTime.
	ExpiringWithinInterval int64
	// ExpiredAwaitingReclaim is how many RUNNING jobs have an expired lease
	// and wait for another worker to reclaim them.
	ExpiredAwaitingReclaim int64
	// ReclaimsLastHour is how many expired leases were reclaimed in the
	// last hour, failover reclaims apart.
	ReclaimsLastHour int64
	// FailoverReclaimsLastHour is how many claims lost with the database
	// (the server restarted or was promoted since the claim) were
	// reclaimed in the last hour without costing their job an attempt
	// (migration 029; read from migration 030 on).
	FailoverReclaimsLastHour int64
	// StaleRenewalsLastHour is how many renewals were stale in the last hour.
	StaleRenewalsLastHour int64
	// StaleReleasesLastHour is how many releases (release_job_claim) were
	// stale in the last hour: the claim was already lost when it was given
	// up.
	StaleReleasesLastHour int64
	// OldestLeaseAge is the age of the oldest running claim, or nil when the
	// queue has no running job.
	OldestLeaseAge *time.Duration
	// DatabaseTime is the database clock when the health was read.
	DatabaseTime time.Time
}

// EvidenceRecord is one append-only control-evidence record: a migration,
// a lease policy or enablement change, or a recorded deployment.
type EvidenceRecord struct {
	// ID is the record's number; it increases with every record.
	ID int64
	// Kind is one of migration_applied, migration_reverted,
	// lease_policy_changed, renewal_enablement_changed, deployment_recorded.
	Kind string
	// Queue is the queue a policy record is about; empty for other kinds.
	Queue string
	// PreviousValues is the JSON object of values before the change, or nil.
	PreviousValues json.RawMessage
	// NewValues is the JSON object of values after the change.
	NewValues json.RawMessage
	// Reason is the operator's reason for the change, as given.
	Reason string
	// ChangedByRole is the database login role that made the change.
	ChangedByRole string
	// RecordedAt is the database time the record was written.
	RecordedAt time.Time
}

// LeaseOutcomeTotal is how often a rare lease outcome happened on a queue.
type LeaseOutcomeTotal struct {
	// Queue is the queue name ("*" for the stale calls not charged to a
	// queue, see QueueLeaseHealth.Queue).
	Queue string
	// Outcome is "reclaim", "stale_renewal" or "stale_release".
	Outcome string
	// Count is the number of such outcomes in the period asked for.
	Count int64
}

// JobStatusTotal is how many jobs a queue holds in one status.
type JobStatusTotal struct {
	// Queue is the queue name.
	Queue string
	// Status is one of QUEUED, RUNNING, RETRY_SCHEDULED, SUCCEEDED, FAILED, CANCELLED.
	Status string
	// Count is the number of jobs.
	Count int64
}

// MigrationVersion is the bundle version a database was last migrated to.
type MigrationVersion struct {
	// Version is the migration number; 0 when no migration evidence exists.
	Version int32
	// AppliedAt is the database time of that migration (zero when Version is 0).
	AppliedAt time.Time
}

// LeasePolicyUpdate is the input of UpdateQueueLeasePolicy: the settings
// to change, each nil to keep the queue's current value (set all four to
// write a whole policy). The values kept are read by the database, inside
// the change and after it has waited for every other policy change to
// commit, so a change committed meanwhile by someone else is kept, never
// overwritten. The database checks the resulting policy and refuses the
// whole change (ErrInvalidPolicy) when a value is out of bounds: 1 s <=
// LeaseDuration <= 24 h, 100 ms <= RenewalInterval <= LeaseDuration/3,
// LeaseDuration <= MaxClaimLifetime <= 7 days, and Reason not blank (at
// most 500 characters).
type LeasePolicyUpdate struct {
	// Queue is the queue to change, or "*" for the default policy.
	Queue string
	// LeaseDuration is the new lease duration, or nil to keep it.
	LeaseDuration *time.Duration
	// RenewalInterval is the new renewal interval, or nil to keep it.
	RenewalInterval *time.Duration
	// MaxClaimLifetime is the new maximum claim lifetime, or nil to keep it.
	MaxClaimLifetime *time.Duration
	// RenewalEnabled switches renewals on or off, or is nil to keep the
	// switch as it is.
	RenewalEnabled *bool
	// Reason says why the change is made; it is kept in the control evidence.
	Reason string
	// Ticket is the change ticket; empty to take it from a leading
	// "ABC-123:" of Reason (none when Reason has no such prefix).
	Ticket string
	// Approver is the login role that approved the change; empty for none.
	Approver string
}

const sqlUpdateQueueLeasePolicy = `SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime,
	renewal_enabled, changed_at, changed_by_role
	FROM durable_jobs.update_queue_lease_policy($1, $2, $3, $4, $5, $6, $7, $8)`

// UpdateQueueLeasePolicy changes the settings of one queue's lease policy
// that update gives and keeps the others (operator role), through the
// database function update_queue_lease_policy. A queue without a policy of
// its own keeps the default "*" policy's values. It returns the queue's
// policy as written, and the database records the change and its reason
// as control evidence. A refused change (a value out of the bounds of
// LeasePolicyUpdate, a malformed queue or change record, or a setting left
// out when the queue has no policy and there is no "*") returns an error
// matching ErrInvalidPolicy, and nothing changes.
func (a *Admin) UpdateQueueLeasePolicy(ctx context.Context, update LeasePolicyUpdate) (LeasePolicy, error) {
	p, err := scanLeasePolicy(a.pool.QueryRow(ctx, sqlUpdateQueueLeasePolicy,
		update.Queue, update.LeaseDuration, update.RenewalInterval, update.MaxClaimLifetime,
		update.RenewalEnabled, update.Reason, optionalText(update.Ticket), optionalText(update.Approver)))
	return p, translateError(err)
}

const sqlQueueLeasePolicies = `SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime,
	renewal_enabled, changed_at, changed_by_role FROM durable_jobs.queue_lease_policies()`

// QueueLeasePolicies returns every queue's lease policy, the default "*"
// included, ordered by queue name (auditor role).
func (a *Admin) QueueLeasePolicies(ctx context.Context) ([]LeasePolicy, error) {
	rows, _ := a.pool.Query(ctx, sqlQueueLeasePolicies)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LeasePolicy, error) { return scanLeasePolicy(row) })
	return out, translateError(err)
}

// scanLeasePolicy reads one row of the policy columns that
// sqlQueueLeasePolicies and sqlUpdateQueueLeasePolicy both select.
func scanLeasePolicy(row pgx.Row) (LeasePolicy, error) {
	var p LeasePolicy
	err := row.Scan(&p.Queue, &p.LeaseDuration, &p.RenewalInterval, &p.MaxClaimLifetime,
		&p.RenewalEnabled, &p.ChangedAt, &p.ChangedByRole)
	return p, err
}

// Deployment is one deployment to record as control evidence with
// RecordDeployment.
type Deployment struct {
	// Version is the deployed application version; it must match
	// ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$ (for example 1.4.2).
	Version string
	// Source is the commit (40 or 64 lowercase hex digits) or artifact
	// digest (sha256:<64 hex digits>) the deployment was built from.
	Source string
	// DeployedBy is the person who deployed, as a directory handle matching
	// ^[a-z][a-z0-9._-]{0,62}$ (never a full name or an e-mail address).
	DeployedBy string
	// Ticket is the change ticket, matching ^[A-Z][A-Z0-9]+-[0-9]+$.
	Ticket string
	// Reason says why; the database refuses one that looks like personal
	// data or a secret, since evidence is kept and never changed.
	Reason string
}

const sqlRecordDeployment = `SELECT durable_jobs.record_deployment($1, $2, $3, $4, $5)`

// RecordDeployment records a deployment with its version, source, person,
// ticket and reason as control evidence, through the database function
// record_deployment (only the role that applied the bundle may execute it).
// A field that does not match its pattern, or a reason that looks like
// personal data or a secret, returns an error matching ErrInvalidPolicy
// (SQLSTATE LF002) and records nothing.
func (a *Admin) RecordDeployment(ctx context.Context, d Deployment) error {
	_, err := a.pool.Exec(ctx, sqlRecordDeployment, d.Version, d.Source, d.DeployedBy, d.Ticket, d.Reason)
	return translateError(err)
}

const sqlLeaseHealthByQueue = `SELECT queue_name, running_jobs, expiring_within_interval,
	expired_awaiting_reclaim, reclaims_last_hour, failover_reclaims_last_hour, stale_renewals_last_hour,
	stale_releases_last_hour, oldest_lease_age, database_time FROM durable_jobs.lease_health_by_queue()`

// LeaseHealth returns the lease health of every queue that has a policy or
// a job, ordered by queue name (auditor role).
func (a *Admin) LeaseHealth(ctx context.Context) ([]QueueLeaseHealth, error) {
	rows, _ := a.pool.Query(ctx, sqlLeaseHealthByQueue)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueLeaseHealth, error) {
		var h QueueLeaseHealth
		err := row.Scan(&h.Queue, &h.RunningJobs, &h.ExpiringWithinInterval, &h.ExpiredAwaitingReclaim,
			&h.ReclaimsLastHour, &h.FailoverReclaimsLastHour, &h.StaleRenewalsLastHour, &h.StaleReleasesLastHour, &h.OldestLeaseAge, &h.DatabaseTime)
		return h, err
	})
	return out, translateError(err)
}

const sqlQueueBacklog = `SELECT queue_name, queued, running, retry_scheduled, failed_last_hour, oldest_due_age,
	database_time FROM durable_jobs.queue_backlog()`

// QueueBacklog returns the backlog of every queue that has a policy, or a
// job that waits, runs or failed in the last hour, ordered by queue name
// (auditor role; a database from before migration 028 has no such
// function).
func (a *Admin) QueueBacklog(ctx context.Context) ([]QueueBacklog, error) {
	rows, _ := a.pool.Query(ctx, sqlQueueBacklog)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueBacklog, error) {
		var b QueueBacklog
		err := row.Scan(&b.Queue, &b.Queued, &b.Running, &b.RetryScheduled, &b.FailedLastHour, &b.OldestDueAge,
			&b.DatabaseTime)
		return b, err
	})
	return out, translateError(err)
}

const sqlControlEvidenceHistory = `SELECT evidence_record_id, evidence_kind, COALESCE(queue_name, ''),
	previous_values, new_values, change_reason, changed_by_role, recorded_at
	FROM durable_jobs.control_evidence_history($1)`

// ControlEvidence returns the control-evidence records written at or after
// since, oldest first; a zero since returns all of them (auditor role).
func (a *Admin) ControlEvidence(ctx context.Context, since time.Time) ([]EvidenceRecord, error) {
	rows, _ := a.pool.Query(ctx, sqlControlEvidenceHistory, optionalTime(since))
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EvidenceRecord, error) {
		var e EvidenceRecord
		var previous, next []byte
		err := row.Scan(&e.ID, &e.Kind, &e.Queue, &previous, &next, &e.Reason, &e.ChangedByRole, &e.RecordedAt)
		if previous != nil {
			e.PreviousValues = json.RawMessage(previous)
		}
		e.NewValues = json.RawMessage(next)
		return e, err
	})
	return out, translateError(err)
}

const sqlLeaseOutcomeTotals = `SELECT queue_name, outcome_kind, outcome_count
	FROM durable_jobs.lease_outcome_totals($1)`

// LeaseOutcomeTotals returns how many reclaims, stale renewals and stale
// releases each queue had since the given time (to the minute); a zero since counts everything
// still kept (auditor role).
func (a *Admin) LeaseOutcomeTotals(ctx context.Context, since time.Time) ([]LeaseOutcomeTotal, error) {
	rows, _ := a.pool.Query(ctx, sqlLeaseOutcomeTotals, optionalTime(since))
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LeaseOutcomeTotal, error) {
		var t LeaseOutcomeTotal
		err := row.Scan(&t.Queue, &t.Outcome, &t.Count)
		return t, err
	})
	return out, translateError(err)
}

const sqlJobStatusTotals = `SELECT queue_name, job_status, job_count FROM durable_jobs.job_status_totals()`

// JobStatusTotals returns how many jobs each queue holds in each status
// (auditor role).
func (a *Admin) JobStatusTotals(ctx context.Context) ([]JobStatusTotal, error) {
	rows, _ := a.pool.Query(ctx, sqlJobStatusTotals)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (JobStatusTotal, error) {
		var t JobStatusTotal
		err := row.Scan(&t.Queue, &t.Status, &t.Count)
		return t, err
	})
	return out, translateError(err)
}

const sqlBundleMigrationVersion = `SELECT migration_version, applied_at FROM durable_jobs.bundle_migration_version()`

// BundleMigrationVersion returns the bundle version the database was last
// migrated to and when, from the migration evidence (auditor role). Version
// is 0 when there is no such evidence.
func (a *Admin) BundleMigrationVersion(ctx context.Context) (MigrationVersion, error) {
	var v MigrationVersion
	err := a.pool.QueryRow(ctx, sqlBundleMigrationVersion).Scan(&v.Version, &v.AppliedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return MigrationVersion{}, nil
	}
	return v, translateError(err)
}

// optionalTime is nil (SQL NULL) for the zero time and t otherwise.
func optionalTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// optionalText is nil (SQL NULL) for the empty string and s otherwise.
func optionalText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

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
