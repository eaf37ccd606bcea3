package evidence

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/goclient"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// OutcomeRetention is how long the database keeps the lease outcome
// tallies the outcome totals are made of.
const OutcomeRetention = 30 * 24 * time.Hour

// Options says which period a report covers. A zero time with a zero
// duration leaves that end open.
type Options struct {
	// Since starts the period (inclusive). Defaults to everything the
	// database keeps.
	Since time.Time
	// SinceBack, when Since is zero and SinceBack positive, starts the
	// period that long before the database's clock.
	SinceBack time.Duration
	// Until ends the period (exclusive); the lease policies are then as of
	// Until. Defaults to report time, with the policies in force now.
	Until time.Time
	// UntilBack, when Until is zero and UntilBack positive, ends the period
	// that long before the database's clock.
	UntilBack time.Duration
}

// ParseEnd reads one end of a period as operators write it (leasectl
// evidence --since and --until): an RFC 3339 time (at), or a positive
// duration back from the database's clock (back), for Options' Since and
// SinceBack or Until and UntilBack. An empty value is neither: an open
// end. ok is false for anything else.
func ParseEnd(value string) (at time.Time, back time.Duration, ok bool) {
	if value == "" {
		return time.Time{}, 0, true
	}
	if t, err := time.Parse(time.RFC3339, value); err == nil {
		return t, 0, true
	}
	if d, err := time.ParseDuration(value); err == nil && d > 0 {
		return time.Time{}, d, true
	}
	return time.Time{}, 0, false
}

// Control is a control named by a section.
type Control struct {
	// ID is the control identifier (LF-...).
	ID string `json:"id"`
	// Title is the control's short title.
	Title string `json:"title"`
}

// Section is one section of the report.
type Section struct {
	// ID is the section identifier (EVIDENCE-...).
	ID string `json:"id"`
	// Title is the section's heading.
	Title string `json:"title"`
	// Shows says what the section shows and over which period.
	Shows string `json:"shows"`
	// Controls are the controls the section supports.
	Controls []Control `json:"controls"`
	// Data is Migration, []Record, []Policy, Disposal, []Outcome, []Status,
	// audit.Report or audit.AccessReview (without its as_of), by section.
	Data any `json:"data"`
}

// SchemaVersion is the version of the report's JSON shape, in the JSON's
// schema_version. It changes whenever a field is added, removed or changes
// meaning. Version 1 was the unversioned shape before it; version 2 added
// schema_version, database, evidence_chain, body_digest, the records'
// ticket and approver, and the disposal section; version 3 added the
// evidence chain's links (every record's id and record_hash), which make
// the report an anchor (`leasectl evidence verify --anchor`), and the
// access review section (EVIDENCE-ACCESS-REVIEW).
const SchemaVersion = 3

// Report is the whole control-evidence report.
type Report struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// GeneratedAt is the database time the report was made, UTC with
	// milliseconds.
	GeneratedAt string `json:"generated_at"`
	// Database says which database the report is of.
	Database Database `json:"database"`
	// Since is the period's start, or nil when open.
	Since *string `json:"since"`
	// Until is the period's end, or nil when open.
	Until *string `json:"until"`
	// Chain anchors the period's evidence records in the hash chain.
	Chain Chain `json:"evidence_chain"`
	// OutcomesWindow is what the lease outcome figures count: the whole
	// minutes inside the period (the tallies count per minute).
	OutcomesWindow OutcomesWindow `json:"lease_outcomes_window"`
	// BodyDigest is "sha256:" and the hex SHA-256 of the report's JSON
	// without generated_at and body_digest (see BodyDigest): two reports
	// of the same state and period have the same digest.
	BodyDigest string `json:"body_digest"`
	// Sections are the sections, in the order of package controls.
	Sections []Section `json:"sections"`
	// Controls is the control index with SOC 2 and CSAP relevance.
	Controls []controls.Control `json:"control_index"`
	// Period is the period in database time (a zero end is open); it is
	// not part of the JSON, which has GeneratedAt, Since and Until.
	Period Period `json:"-"`
}

// Database identifies the database a report is of: the same type as the
// audit's (audit.Database).
type Database = audit.Database

// Chain places a period's evidence records in the hash chain: how many
// records the period holds, the first and last record's id, and the chain
// head, the record_hash of the last record. Each record_hash covers the
// record's content and every record before it, so the same period
// reported again later has the same chain head unless a record up to the
// last one was altered, removed or inserted, even with every later hash
// recomputed (which AUDIT-EVIDENCE-CHAIN alone cannot see).
type Chain struct {
	// RecordCount is how many evidence records the period holds.
	RecordCount int `json:"record_count"`
	// FirstID is the id of the period's first record, nil when none.
	FirstID *int64 `json:"first_id"`
	// LastID is the id of the period's last record, nil when none.
	LastID *int64 `json:"last_id"`
	// Head is the hex record_hash of the last record, nil when none.
	Head *string `json:"chain_head"`
	// Links are the period's records' ids and record hashes, oldest
	// first: what `leasectl evidence verify --anchor` compares the live
	// chain with, naming the first record that differs.
	Links []ChainLink `json:"links"`
}

// ChainLink is one record of the chain: its id and record_hash.
type ChainLink struct {
	// ID is the record's id.
	ID int64 `json:"id"`
	// Hash is the hex record_hash.
	Hash string `json:"record_hash"`
}

// Period is a report's period in database time.
type Period struct {
	// GeneratedAt is when the report was made.
	GeneratedAt time.Time
	// Since is the start, zero when open.
	Since time.Time
	// Until is the end, zero when open.
	Until time.Time
}

// OutcomesWindow is the span the lease outcome figures count: the whole
// minutes inside the period, from its start rounded up to a minute to its
// end rounded down (a minute the period holds only part of is left out,
// at either end); open ends are nil.
type OutcomesWindow struct {
	// Granularity is "whole minutes".
	Granularity string `json:"granularity"`
	// From is the first minute counted, or nil from the oldest tally.
	From *string `json:"from"`
	// Until is the end of the last minute counted, or nil up to the report.
	Until *string `json:"until"`
}

// outcomesWindow returns the window of a period (see OutcomesWindow).
func (p Period) outcomesWindow() (from, until time.Time) {
	from, until = p.Since, p.Until
	if !from.IsZero() && !from.Truncate(time.Minute).Equal(from) {
		from = from.Truncate(time.Minute).Add(time.Minute)
	}
	if !until.IsZero() {
		until = until.Truncate(time.Minute)
	}
	return from, until
}

// OutcomesCoverFrom returns the earliest time the outcome totals can cover
// (tallies are kept for OutcomeRetention) and whether the period starts
// before it, so the totals cover less than the period.
func (p Period) OutcomesCoverFrom() (time.Time, bool) {
	from := p.GeneratedAt.Add(-OutcomeRetention)
	return from, p.Since.IsZero() || p.Since.Before(from)
}

// Record is one control-evidence record.
type Record struct {
	// ID is the record's number; it increases with every record.
	ID int64 `json:"id"`
	// Kind is the evidence kind (lease_policy_changed, ...).
	Kind string `json:"kind"`
	// Queue is the queue a policy record is about, or nil.
	Queue *string `json:"queue"`
	// PreviousValues is the JSON of the values before the change (null for none).
	PreviousValues json.RawMessage `json:"previous_values"`
	// NewValues is the JSON of the values after the change.
	NewValues json.RawMessage `json:"new_values"`
	// Reason is the reason as stored.
	Reason string `json:"reason"`
	// Ticket is the change ticket given with the change, or nil.
	Ticket *string `json:"ticket"`
	// Approver is the approver login named with the change, or nil.
	Approver *string `json:"approver"`
	// ChangedByRole is the login that made the change.
	ChangedByRole string `json:"changed_by_role"`
	// RecordedAt is the database time of the record, UTC with milliseconds.
	RecordedAt string `json:"recorded_at"`
}

// Migration is the migration version section's data.
type Migration struct {
	// MigrationVersion is the database's bundle version (0: none recorded).
	MigrationVersion int32 `json:"migration_version"`
	// AppliedAt is when it was applied, or nil.
	AppliedAt *string `json:"applied_at"`
	// NewestVersion is the newest version this build carries.
	NewestVersion int32 `json:"newest_version"`
	// UpToDate is whether the two are equal.
	UpToDate bool `json:"up_to_date"`
}

// Policy is one queue's lease policy; durations are in seconds.
type Policy struct {
	// Queue is the queue, or "*" for the default.
	Queue string `json:"queue"`
	// LeaseDurationSeconds is the lease duration.
	LeaseDurationSeconds float64 `json:"lease_duration_seconds"`
	// RenewalIntervalSeconds is the renewal interval.
	RenewalIntervalSeconds float64 `json:"renewal_interval_seconds"`
	// MaxClaimLifetimeSeconds is the maximum claim lifetime.
	MaxClaimLifetimeSeconds float64 `json:"max_claim_lifetime_seconds"`
	// RenewalEnabled is the queue's renewal switch.
	RenewalEnabled bool `json:"renewal_enabled"`
	// ChangedAt is when it was last changed, UTC with milliseconds.
	ChangedAt string `json:"changed_at"`
	// ChangedByRole is who changed it last.
	ChangedByRole string `json:"changed_by_role"`
	// Durations holds the three durations as time.Duration for renderers.
	Durations PolicyDurations `json:"-"`
}

// PolicyOf is p as the report holds it, which is also how leasectl policy
// show --output json prints it.
func PolicyOf(p goclient.LeasePolicy) Policy {
	return Policy{Queue: p.Queue, LeaseDurationSeconds: p.LeaseDuration.Seconds(),
		RenewalIntervalSeconds: p.RenewalInterval.Seconds(), MaxClaimLifetimeSeconds: p.MaxClaimLifetime.Seconds(),
		RenewalEnabled: p.RenewalEnabled, ChangedAt: formatTime(p.ChangedAt), ChangedByRole: p.ChangedByRole,
		Durations: PolicyDurations{p.LeaseDuration, p.RenewalInterval, p.MaxClaimLifetime}}
}

// PolicyDurations are a policy's durations.
type PolicyDurations struct {
	// Lease is the lease duration.
	Lease time.Duration
	// RenewalInterval is the renewal interval.
	RenewalInterval time.Duration
	// MaxClaimLifetime is the maximum claim lifetime.
	MaxClaimLifetime time.Duration
}

// Outcome is one aggregate lease outcome.
type Outcome struct {
	// Queue is the queue ("*" for stale calls not charged to a queue: see
	// lease_outcome_totals in docs/sql-api.md).
	Queue string `json:"queue"`
	// Outcome is stale_renewal, stale_release or reclaim.
	Outcome string `json:"outcome"`
	// Count is how often it happened in the period.
	Count int64 `json:"count"`
}

// Status is one job status total.
type Status struct {
	// Queue is the queue.
	Queue string `json:"queue"`
	// Status is the job status.
	Status string `json:"status"`
	// Count is how many jobs have it.
	Count int64 `json:"count"`
}

// Disposal is the disposal section's data: what the retention purge and
// erasure removed in the period, as counts, and the retention policy
// changes. It holds no job id and no erasure reason.
type Disposal struct {
	// PurgeRuns is how many purge calls removed something (one
	// job_data_purged record each).
	PurgeRuns int `json:"purge_runs"`
	// Purged is what they removed, summed per queue and kind.
	Purged []PurgedCount `json:"purged"`
	// Erasures are the payload erasures, per queue and job status.
	Erasures []ErasureCount `json:"erasures"`
	// RetentionPolicyChanges are the retention_policy_changed records.
	RetentionPolicyChanges []Record `json:"retention_policy_changes"`
}

// PurgedCount is how much of one kind the purge removed from one queue.
type PurgedCount struct {
	// Queue is the queue.
	Queue string `json:"queue"`
	// Kind is job_record (the job's row with its payload, outcome ledger
	// and result documents) or payload (the payload, with the job's result
	// documents cleared).
	Kind string `json:"kind"`
	// Count is how many jobs.
	Count int64 `json:"count"`
}

// ErasureCount is how many finished jobs of one queue and status had their
// payload erased on request.
type ErasureCount struct {
	// Queue is the queue.
	Queue string `json:"queue"`
	// JobStatus is the job's status when it was erased.
	JobStatus string `json:"job_status"`
	// Count is how many erasures.
	Count int64 `json:"count"`
}

// ReadError is a read of the database that failed while building a report.
type ReadError struct {
	// Read says what was being read ("read lease policies", ...).
	Read string
	// Err is the error.
	Err error
}

// Error implements error.
func (e *ReadError) Error() string { return e.Read + ": " + e.Err.Error() }

// Unwrap returns the read's error.
func (e *ReadError) Unwrap() error { return e.Err }

// ErrEmptyPeriod is returned (wrapped in a *PeriodError) when the period's
// end is not after its start.
var ErrEmptyPeriod = errors.New("evidence: the period's end is not after its start")

// PeriodError is a period whose end is not after its start, resolved in
// database time.
type PeriodError struct {
	// Since is the resolved start.
	Since time.Time
	// Until is the resolved end.
	Until time.Time
}

// Error implements error.
func (e *PeriodError) Error() string {
	return ErrEmptyPeriod.Error() + " (" + formatTime(e.Since) + ", " + formatTime(e.Until) + ")"
}

// Unwrap returns ErrEmptyPeriod.
func (e *PeriodError) Unwrap() error { return ErrEmptyPeriod }

// data is everything the report is made of.
type data struct {
	period    Period
	database  Database
	migration goclient.MigrationVersion
	records   []evidenceRow
	policies  []goclient.LeasePolicy
	outcomes  []goclient.LeaseOutcomeTotal
	statuses  []goclient.JobStatusTotal
	processed []Processing
	audit     audit.Report
	access    audit.AccessReview
}

// Build reads the database through pool, a login granted
// durable_job_auditor, and returns the report for the period opts names.
// A failed read returns a *ReadError naming it, an audit check that could
// not run an *audit.CheckError, and an empty period a *PeriodError.
func Build(ctx context.Context, pool *pgxpool.Pool, opts Options) (Report, error) {
	client, err := goclient.NewAdmin(pool) // reads only: no heartbeat, no pool of its own
	if err != nil {
		return Report{}, err
	}
	d := data{}
	id, err := audit.ReadIdentity(ctx, pool)
	if err != nil {
		return Report{}, &ReadError{"read database time", err}
	}
	d.period.GeneratedAt, d.database = id.GeneratedAt, id.Database
	d.period.Since = resolve(opts.Since, opts.SinceBack, d.period.GeneratedAt)
	d.period.Until = resolve(opts.Until, opts.UntilBack, d.period.GeneratedAt)
	if !d.period.Until.IsZero() && !d.period.Since.IsZero() && !d.period.Until.After(d.period.Since) {
		return Report{}, &PeriodError{Since: d.period.Since, Until: d.period.Until}
	}
	if d.migration, err = client.BundleMigrationVersion(ctx); err != nil {
		return Report{}, &ReadError{"read migration version", err}
	}
	// Reading the server's availability first records a promotion or
	// restart not recorded yet, so the report's availability section holds
	// it.
	if _, err = client.ServerAvailability(ctx); err != nil {
		return Report{}, &ReadError{"read the server's availability", err}
	}
	if d.records, err = evidenceRecords(ctx, pool, d.period); err != nil {
		return Report{}, &ReadError{"read control evidence", err}
	}
	if d.period.Until.IsZero() {
		d.policies, err = client.QueueLeasePolicies(ctx)
	} else {
		d.policies, err = policiesAsOf(ctx, pool, d.period.Until)
	}
	if err != nil {
		return Report{}, &ReadError{"read lease policies", err}
	}
	// Whole minutes inside the period: from its start rounded up (the
	// totals count from the minute that holds their since) to its end
	// rounded down (subtracting the totals from the minute that holds it).
	outcomesFrom, outcomesUntil := d.period.outcomesWindow()
	if d.outcomes, err = client.LeaseOutcomeTotals(ctx, outcomesFrom); err != nil {
		return Report{}, &ReadError{"read lease outcome totals", err}
	}
	if !outcomesUntil.IsZero() {
		later, err := client.LeaseOutcomeTotals(ctx, outcomesUntil)
		if err != nil {
			return Report{}, &ReadError{"read lease outcome totals", err}
		}
		d.outcomes = subtractOutcomes(d.outcomes, later)
	}
	if d.processed, err = processingOf(ctx, pool, d.period); err != nil {
		return Report{}, &ReadError{"read processing counts", err}
	}
	if d.statuses, err = client.JobStatusTotals(ctx); err != nil {
		return Report{}, &ReadError{"read job status totals", err}
	}
	if d.access, err = readAccess(ctx, pool); err != nil {
		return Report{}, &ReadError{"read the access review", err}
	}
	if d.audit, err = audit.Run(ctx, pool); err != nil {
		return Report{}, err
	}
	report, err := build(d)
	if err != nil {
		return Report{}, &ReadError{"read disposal evidence", err}
	}
	return report, nil
}

// readAccess reads the access review in one read-only snapshot, without
// its own time: the report's generated_at is its time, and a time inside
// the body would make two reports of the same state differ.
func readAccess(ctx context.Context, pool *pgxpool.Pool) (audit.AccessReview, error) {
	review, err := audit.ReviewAccess(ctx, pool)
	review.AsOf = ""
	return review, err
}

// resolve returns at, or back before now when at is zero and back
// positive, or the zero time.
func resolve(at time.Time, back time.Duration, now time.Time) time.Time {
	if at.IsZero() && back > 0 {
		return now.Add(-back)
	}
	return at
}

// evidenceRow is one row of control_evidence_records.
type evidenceRow struct {
	ID             int64
	Kind           string
	Queue          *string
	PreviousValues []byte
	NewValues      []byte
	Reason         string
	Ticket         *string
	Approver       *string
	ChangedByRole  string
	RecordedAt     time.Time
	Hash           []byte
}

// evidenceRecords reads the evidence records written in the period, oldest
// first, with their structured fields and chain hashes (auditor role).
func evidenceRecords(ctx context.Context, pool *pgxpool.Pool, p Period) ([]evidenceRow, error) {
	rows, _ := pool.Query(ctx, `SELECT evidence_record_id, evidence_kind, queue_name, previous_values, new_values,
		change_reason, change_ticket, change_approver, changed_by_role, recorded_at, record_hash
		FROM durable_jobs.control_evidence_records($1, $2)`, optional(p.Since), optional(p.Until))
	return pgx.CollectRows(rows, pgx.RowToStructByPos[evidenceRow])
}

// optional is t, or NULL for the zero time.
func optional(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// subtractOutcomes returns the totals from since minus those from until:
// what was counted in [since, until), by whole minutes. Pairs left at zero
// are dropped.
func subtractOutcomes(fromSince, fromUntil []goclient.LeaseOutcomeTotal) []goclient.LeaseOutcomeTotal {
	later := map[[2]string]int64{}
	for _, o := range fromUntil {
		later[[2]string{o.Queue, o.Outcome}] = o.Count
	}
	out := []goclient.LeaseOutcomeTotal{}
	for _, o := range fromSince {
		o.Count -= later[[2]string{o.Queue, o.Outcome}]
		if o.Count > 0 {
			out = append(out, o)
		}
	}
	return out
}

// policiesAsOfSQL reconstructs each queue's lease policy as of $1 from the
// last lease_policy_changed record before it. That record's new values name
// the row they came from (policy_queue_name; migration 001's record of '*'
// predates the key): after a queue's row was deleted they are the default's
// or null, and the queue, which had no policy of its own then, is left out.
const policiesAsOfSQL = `SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled,
	recorded_at, changed_by_role
FROM (SELECT DISTINCT ON (e.queue_name) e.queue_name,
	(NOT e.new_values ? 'policy_queue_name' OR e.new_values ->> 'policy_queue_name' = e.queue_name) AS own_row,
	(e.new_values ->> 'lease_duration')::interval AS lease_duration,
	(e.new_values ->> 'renewal_interval')::interval AS renewal_interval,
	(e.new_values ->> 'max_claim_lifetime')::interval AS max_claim_lifetime,
	(e.new_values ->> 'renewal_enabled')::boolean AS renewal_enabled, e.recorded_at, e.changed_by_role
	FROM durable_jobs.control_evidence_history(NULL) e
	WHERE e.evidence_kind = 'lease_policy_changed' AND e.recorded_at < $1
	ORDER BY e.queue_name, e.evidence_record_id DESC) last
WHERE own_row
ORDER BY queue_name`

// policiesAsOf returns each queue's lease policy as of until, from the
// evidence (auditor role).
func policiesAsOf(ctx context.Context, pool *pgxpool.Pool, until time.Time) ([]goclient.LeasePolicy, error) {
	rows, _ := pool.Query(ctx, policiesAsOfSQL, until)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (goclient.LeasePolicy, error) {
		var p goclient.LeasePolicy
		err := row.Scan(&p.Queue, &p.LeaseDuration, &p.RenewalInterval, &p.MaxClaimLifetime, &p.RenewalEnabled,
			&p.ChangedAt, &p.ChangedByRole)
		return p, err
	})
}

// recordsOfKind returns the evidence records of the given kinds.
func recordsOfKind(records []evidenceRow, kinds ...string) []Record {
	out := []Record{}
	for _, r := range records {
		if slices.Contains(kinds, r.Kind) {
			out = append(out, toRecord(r))
		}
	}
	return out
}

func toRecord(r evidenceRow) Record {
	out := Record{ID: r.ID, Kind: r.Kind, Queue: r.Queue, PreviousValues: r.PreviousValues, NewValues: r.NewValues,
		Reason: r.Reason, Ticket: r.Ticket, Approver: r.Approver, ChangedByRole: r.ChangedByRole,
		RecordedAt: formatTime(r.RecordedAt)}
	if out.PreviousValues == nil {
		out.PreviousValues = json.RawMessage("null")
	}
	return out
}

// chainOf places the period's records in the hash chain.
func chainOf(records []evidenceRow) Chain {
	c := Chain{RecordCount: len(records), Links: make([]ChainLink, 0, len(records))}
	for _, r := range records {
		c.Links = append(c.Links, ChainLink{ID: r.ID, Hash: hex.EncodeToString(r.Hash)})
	}
	if len(records) > 0 {
		first, last := records[0].ID, records[len(records)-1].ID
		head := hex.EncodeToString(records[len(records)-1].Hash)
		c.FirstID, c.LastID, c.Head = &first, &last, &head
	}
	return c
}

// disposalOf sums the period's purge and erasure records and lists its
// retention policy changes. A purge record whose values are not what
// purge_expired_job_data writes is an error.
func disposalOf(records []evidenceRow) (Disposal, error) {
	d := Disposal{Purged: []PurgedCount{}, Erasures: []ErasureCount{},
		RetentionPolicyChanges: recordsOfKind(records, "retention_policy_changed")}
	purged := map[[2]string]int64{}
	erased := map[[2]string]int64{}
	for _, r := range records {
		switch r.Kind {
		case "job_data_purged":
			var values struct {
				Purged []struct {
					Queue string `json:"queue_name"`
					Kind  string `json:"purge_kind"`
					Count *int64 `json:"purged_count"`
				} `json:"purged"`
			}
			if err := json.Unmarshal(r.NewValues, &values); err != nil {
				return Disposal{}, fmt.Errorf("record %d: %w", r.ID, err)
			}
			d.PurgeRuns++
			for _, p := range values.Purged {
				if p.Queue == "" || p.Kind == "" || p.Count == nil {
					return Disposal{}, fmt.Errorf("record %d: a purged entry lacks its queue, kind or count", r.ID)
				}
				purged[[2]string{p.Queue, p.Kind}] += *p.Count
			}
		case "job_payload_erased":
			var values struct {
				JobStatus string `json:"job_status"`
			}
			if err := json.Unmarshal(r.NewValues, &values); err != nil {
				return Disposal{}, fmt.Errorf("record %d: %w", r.ID, err)
			}
			queue := ""
			if r.Queue != nil {
				queue = *r.Queue
			}
			erased[[2]string{queue, values.JobStatus}]++
		}
	}
	for _, k := range sortedKeys(purged) {
		d.Purged = append(d.Purged, PurgedCount{Queue: k[0], Kind: k[1], Count: purged[k]})
	}
	for _, k := range sortedKeys(erased) {
		d.Erasures = append(d.Erasures, ErasureCount{Queue: k[0], JobStatus: k[1], Count: erased[k]})
	}
	return d, nil
}

// Processing is what one queue processed in the period
// (durable_jobs.processing_counts): each figure counted when it happened,
// so a closed period's figures stay as they are until the retention purge
// removes its jobs.
type Processing struct {
	// Queue is the queue.
	Queue string `json:"queue_name"`
	// Enqueued is how many jobs were created.
	Enqueued int64 `json:"enqueued"`
	// Succeeded, Retried and Failed are the outcomes workers recorded.
	Succeeded int64 `json:"succeeded"`
	// Retried is how many retries workers scheduled.
	Retried int64 `json:"retried"`
	// Failed is how many failures workers recorded.
	Failed int64 `json:"failed"`
	// Cancelled is how many jobs were cancelled (the action trail).
	Cancelled int64 `json:"cancelled"`
	// Replayed is how many jobs operators replayed.
	Replayed int64 `json:"replayed"`
}

// processingOf reads the period's processing counts per queue.
func processingOf(ctx context.Context, pool *pgxpool.Pool, p Period) ([]Processing, error) {
	rows, _ := pool.Query(ctx, `SELECT queue_name, enqueued, succeeded, retried, failed, cancelled, replayed
		FROM durable_jobs.processing_counts($1, $2)`, optional(p.Since), optional(p.Until))
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Processing])
	if out == nil && err == nil {
		out = []Processing{}
	}
	return out, err
}

// OperatorAction is how many jobs one login acted on in one way in one
// queue during the period.
type OperatorAction struct {
	// Queue is the queue.
	Queue string `json:"queue_name"`
	// Action is the evidence kind: job_cancelled, job_replayed or
	// job_payload_erased.
	Action string `json:"action"`
	// Login is the login that acted (the records' changed_by_role).
	Login string `json:"login"`
	// Count is how many jobs.
	Count int64 `json:"jobs"`
}

// operatorActionsOf counts the period's operator actions on jobs per
// queue, action and login, in that order.
func operatorActionsOf(records []evidenceRow) []OperatorAction {
	counts := map[[3]string]int64{}
	for _, r := range records {
		if r.Kind == "job_cancelled" || r.Kind == "job_replayed" || r.Kind == "job_payload_erased" {
			queue := ""
			if r.Queue != nil {
				queue = *r.Queue
			}
			counts[[3]string{queue, r.Kind, r.ChangedByRole}]++
		}
	}
	out := []OperatorAction{}
	for k, n := range counts {
		out = append(out, OperatorAction{Queue: k[0], Action: k[1], Login: k[2], Count: n})
	}
	slices.SortFunc(out, func(a, b OperatorAction) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Action, b.Action), cmp.Compare(a.Login, b.Login))
	})
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys(m map[[2]string]int64) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	return keys
}

// BodyDigest returns "sha256:" and the hex SHA-256 of a report's JSON
// (as `leasectl evidence --format json` writes it, or as Report encodes)
// without its generated_at and body_digest members, in canonical form:
// object members sorted by name, no white space, strings escaped as Go's
// encoding/json does without HTML escaping, numbers as written. For a
// report whose strings hold no U+2028 or U+2029 this is the SHA-256 of
// `jq -S -c 'del(.generated_at, .body_digest)'` without its final newline.
// It is audit.BodyDigest, which digests the audit's JSON the same way.
func BodyDigest(reportJSON []byte) (string, error) { return audit.BodyDigest(reportJSON) }

// build arranges the data into the sections of package controls and
// digests the body.
func build(d data) (Report, error) {
	newest := sqlbundle.NewestVersion()
	migration := Migration{MigrationVersion: d.migration.Version, NewestVersion: newest,
		UpToDate: d.migration.Version == newest}
	if d.migration.Version != 0 {
		at := formatTime(d.migration.AppliedAt)
		migration.AppliedAt = &at
	}
	policies := make([]Policy, 0, len(d.policies))
	for _, p := range d.policies {
		policies = append(policies, PolicyOf(p))
	}
	outcomes := make([]Outcome, 0, len(d.outcomes))
	for _, o := range d.outcomes {
		outcomes = append(outcomes, Outcome(o))
	}
	statuses := make([]Status, 0, len(d.statuses))
	for _, s := range d.statuses {
		statuses = append(statuses, Status(s))
	}
	disposal, err := disposalOf(d.records)
	if err != nil {
		return Report{}, err
	}
	byID := map[string]any{
		controls.SectionMigration:       migration,
		controls.SectionMigrations:      recordsOfKind(d.records, "migration_applied", "migration_reverted"),
		controls.SectionDeployments:     recordsOfKind(d.records, "deployment_recorded"),
		controls.SectionPolicies:        policies,
		controls.SectionPolicy:          recordsOfKind(d.records, "lease_policy_changed", "change_control_changed"),
		controls.SectionEnablement:      recordsOfKind(d.records, "renewal_enablement_changed"),
		controls.SectionDisposal:        disposal,
		controls.SectionOutcomes:        outcomes,
		controls.SectionJobStatus:       statuses,
		controls.SectionAudit:           d.audit,
		controls.SectionAccess:          d.access,
		controls.SectionApprovals:       recordsOfKind(d.records, "change_proposed", "change_approved", "change_rejected"),
		controls.SectionOperatorActions: operatorActionsOf(d.records),
		controls.SectionProcessing:      d.processed,
		controls.SectionAvailability:    recordsOfKind(d.records, "server_timeline_changed", "server_restarted"),
	}
	report := Report{SchemaVersion: SchemaVersion, GeneratedAt: formatTime(d.period.GeneratedAt), Database: d.database,
		Chain: chainOf(d.records), Controls: controls.Controls(), Period: d.period,
		OutcomesWindow: OutcomesWindow{Granularity: "whole minutes"}}
	if from, until := d.period.outcomesWindow(); !from.IsZero() || !until.IsZero() {
		if !from.IsZero() {
			f := formatTime(from)
			report.OutcomesWindow.From = &f
		}
		if !until.IsZero() {
			u := formatTime(until)
			report.OutcomesWindow.Until = &u
		}
	}
	if !d.period.Since.IsZero() {
		since := formatTime(d.period.Since)
		report.Since = &since
	}
	if !d.period.Until.IsZero() {
		until := formatTime(d.period.Until)
		report.Until = &until
	}
	for _, section := range controls.EvidenceSections() {
		out := Section{ID: section.ID, Title: section.Title, Shows: section.Shows, Data: byID[section.ID]}
		for _, id := range section.Controls {
			c, _ := controls.ControlByID(id)
			out.Controls = append(out.Controls, Control{ID: c.ID, Title: c.Title})
		}
		report.Sections = append(report.Sections, out)
	}
	encoded, err := json.Marshal(report)
	if err != nil {
		return Report{}, err
	}
	if report.BodyDigest, err = BodyDigest(encoded); err != nil {
		return Report{}, err
	}
	return report, nil
}

// formatTime prints a time as UTC with milliseconds, as every leasefence
// report does.
func formatTime(t time.Time) string { return audit.FormatTime(t) }
