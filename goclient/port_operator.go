package goclient

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// This file is the operator port: the operator's recorded changes (job
// cancel and replay with a reason, retention, change control, proposals of
// maker-checker, payload erasure) and the payload-blind job views, methods
// of Admin. Like port_admin.go, it writes each statement once, as a
// constant directly above the method that runs it. The JSON names of its
// result types are the SQL columns', so a tool can print them as they are.

// ChangeRecord is what a recorded operator change carries, checked by the
// database against the change control (ChangeControl): the reason (1 to
// 500 characters; one that looks like personal data or a secret is refused
// with ErrInvalidPolicy), the change ticket and the approving login, each
// empty for none.
type ChangeRecord struct {
	// Reason says why; it is kept in the control evidence.
	Reason string
	// Ticket is the change ticket; empty for none.
	Ticket string
	// Approver is the operator login that approved the change; empty for none.
	Approver string
}

// JobView is one job as the operator views show it: no payload, claim
// token, owner id or idempotency key.
type JobView struct {
	// ID is the job's job_record_id.
	ID int64 `json:"job_record_id"`
	// Queue is the job's queue.
	Queue string `json:"queue_name"`
	// Status is the job's status (QUEUED, RUNNING, ...).
	Status string `json:"job_status"`
	// Attempt is the number of claims used so far.
	Attempt int32 `json:"attempt_number"`
	// MaxAttempts is how many claims the job may use.
	MaxAttempts int32 `json:"max_attempts"`
	// FencingGeneration is the job's lease_fencing_generation.
	FencingGeneration int64 `json:"lease_fencing_generation"`
	// LeaseExpiresAt is the current claim's expiry; nil when unclaimed.
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	// RenewalCount is how often the current claim was renewed.
	RenewalCount int64 `json:"lease_renewal_count"`
	// FailureReasonCode is the last failure's bounded reason code, or nil.
	FailureReasonCode *string `json:"failure_reason_code"`
	// RunAfter is the earliest time the job may be claimed.
	RunAfter time.Time `json:"run_after"`
	// CreatedAt is when the job was enqueued.
	CreatedAt time.Time `json:"created_at"`
	// StatusChangedAt is when its status last changed.
	StatusChangedAt time.Time `json:"status_changed_at"`
}

// JobFilter narrows Jobs; its zero value lists the newest jobs of every
// queue and status.
type JobFilter struct {
	// Queue is the queue to list; empty for every queue.
	Queue string
	// Status is the status to list (QUEUED, RUNNING, ...); empty for every status.
	Status string
	// After lists only jobs older than this job id (the last id of the
	// previous page); 0 starts at the newest job.
	After int64
	// Limit is the page size, 1 to 1000.
	Limit int
}

const sqlJobViewColumns = `job_record_id, queue_name, job_status, attempt_number, max_attempts,
	lease_fencing_generation, lease_expires_at, lease_renewal_count, failure_reason_code, run_after,
	created_at, status_changed_at`

const sqlOperatorListJobs = `SELECT ` + sqlJobViewColumns + ` FROM durable_jobs.operator_list_jobs($1, $2, $3, $4)`

// Jobs lists jobs newest first (highest id first), as filter narrows them
// (operator role). A bad status or limit returns ErrInvalidArgument.
func (a *Admin) Jobs(ctx context.Context, filter JobFilter) ([]JobView, error) {
	var after any
	if filter.After != 0 {
		after = filter.After
	}
	rows, _ := a.pool.Query(ctx, sqlOperatorListJobs, optionalText(filter.Queue), optionalText(filter.Status), after, filter.Limit)
	return scanJobViews(rows)
}

const sqlOperatorJobDetail = `SELECT ` + sqlJobViewColumns + ` FROM durable_jobs.operator_job_detail($1)`

// Job returns one job's view, or ErrJobNotFound (operator role).
func (a *Admin) Job(ctx context.Context, jobID int64) (JobView, error) {
	rows, _ := a.pool.Query(ctx, sqlOperatorJobDetail, jobID)
	jobs, err := scanJobViews(rows)
	if err == nil && len(jobs) == 0 {
		err = ErrJobNotFound
	}
	if err != nil {
		return JobView{}, err
	}
	return jobs[0], nil
}

// scanJobViews reads the rows of an operator job view.
func scanJobViews(rows pgx.Rows) ([]JobView, error) {
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (JobView, error) {
		var j JobView
		err := row.Scan(&j.ID, &j.Queue, &j.Status, &j.Attempt, &j.MaxAttempts, &j.FencingGeneration,
			&j.LeaseExpiresAt, &j.RenewalCount, &j.FailureReasonCode, &j.RunAfter, &j.CreatedAt, &j.StatusChangedAt)
		return j, err
	})
	return jobs, translateError(err)
}

// JobAction is one entry of a job's action trail: an operator's recorded
// cancel or replay.
type JobAction struct {
	// Kind is the action: cancel or replay.
	Kind string `json:"action_kind"`
	// At is the database time of the action.
	At time.Time `json:"acted_at"`
	// By is the login role that acted.
	By string `json:"acted_by_role"`
	// Reason is the action's reason (nil for an unrecorded action).
	Reason *string `json:"change_reason"`
	// Ticket is the action's change ticket, or nil.
	Ticket *string `json:"change_ticket"`
	// Approver is the login that approved the action, or nil.
	Approver *string `json:"change_approver"`
}

const sqlOperatorJobActions = `SELECT action_kind, acted_at, acted_by_role, change_reason, change_ticket, change_approver
	FROM durable_jobs.operator_job_actions($1)`

// JobActions returns a job's action trail, oldest first (operator role).
func (a *Admin) JobActions(ctx context.Context, jobID int64) ([]JobAction, error) {
	rows, _ := a.pool.Query(ctx, sqlOperatorJobActions, jobID)
	actions, err := pgx.CollectRows(rows, pgx.RowToStructByPos[JobAction])
	return actions, translateError(err)
}

// RetentionPolicy is one queue's retention policy: how long a finished job
// keeps its payload, and its row and outcome ledger.
type RetentionPolicy struct {
	// Queue is the queue name, or "*" for the default policy.
	Queue string
	// PayloadRetention and RecordRetention are the periods, a month
	// counting 30 days.
	PayloadRetention, RecordRetention time.Duration
	// PayloadRetentionText and RecordRetentionText are the stored interval
	// as PostgreSQL prints it when it is no plain duration (a month part,
	// or day and time parts of different signs: a row written before
	// migration 024), else empty.
	PayloadRetentionText, RecordRetentionText string
	// ChangedAt is the database time of the last change.
	ChangedAt time.Time
	// ChangedByRole is the database login role that made the last change.
	ChangedByRole string
}

const sqlQueueRetentionPolicies = `SELECT queue_name, payload_retention, record_retention, changed_at, changed_by_role,
	payload_retention::text, record_retention::text FROM durable_jobs.queue_retention_policies()`

// RetentionPolicies returns every queue's retention policy, the default
// "*" included (operator role).
func (a *Admin) RetentionPolicies(ctx context.Context) ([]RetentionPolicy, error) {
	rows, _ := a.pool.Query(ctx, sqlQueueRetentionPolicies)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RetentionPolicy, error) {
		var p RetentionPolicy
		var payload, record pgtype.Interval
		var payloadText, recordText string
		err := row.Scan(&p.Queue, &payload, &record, &p.ChangedAt, &p.ChangedByRole, &payloadText, &recordText)
		p.PayloadRetention, p.PayloadRetentionText = retentionPeriod(payload, payloadText)
		p.RecordRetention, p.RecordRetentionText = retentionPeriod(record, recordText)
		return p, err
	})
	return out, translateError(err)
}

// retentionPeriod is iv as a duration (a month counting 30 days), and text
// when iv is no plain duration.
func retentionPeriod(iv pgtype.Interval, text string) (time.Duration, string) {
	d := time.Duration(iv.Days)*24*time.Hour + time.Duration(iv.Microseconds)*time.Microsecond
	if iv.Months != 0 || (iv.Days > 0 && iv.Microseconds < 0) || (iv.Days < 0 && iv.Microseconds > 0) || d < 0 {
		return d + time.Duration(iv.Months)*30*24*time.Hour, text
	}
	return d, ""
}

const sqlSetQueueRetentionPolicy = `SELECT durable_jobs.set_queue_retention_policy($1, $2::interval, $3::interval, $4, $5, $6)`

// SetRetentionPolicy sets queue's retention policy (operator role). The
// database refuses the whole change with ErrInvalidPolicy unless 1 h <=
// payload <= record <= 3650 days and change is a valid record.
func (a *Admin) SetRetentionPolicy(ctx context.Context, queue string, payload, record time.Duration, change ChangeRecord) error {
	_, err := a.pool.Exec(ctx, sqlSetQueueRetentionPolicy, queue, payload, record, change.Reason,
		optionalText(change.Ticket), optionalText(change.Approver))
	return translateError(err)
}

// PurgeTotal is what one purge batch purged for one queue and kind:
// job_record (row, payload and ledger deleted) or payload (payload deleted
// and result documents cleared, row kept).
type PurgeTotal struct {
	// Queue is the queue name.
	Queue string `json:"queue"`
	// Kind is job_record or payload.
	Kind string `json:"purge_kind"`
	// Count is how many jobs were purged.
	Count int64 `json:"purged_count"`
}

const sqlPurgeExpiredJobData = `SELECT queue_name, purge_kind, purged_count FROM durable_jobs.purge_expired_job_data($1)`

// PurgeExpired runs one batch of at most batchSize jobs of the retention
// purge, in its own transaction, and returns what it purged; none when
// nothing is left to purge (operator role).
func (a *Admin) PurgeExpired(ctx context.Context, batchSize int) ([]PurgeTotal, error) {
	rows, _ := a.pool.Query(ctx, sqlPurgeExpiredJobData, batchSize)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[PurgeTotal])
	return out, translateError(err)
}

// PurgeReport is what a whole retention purge did (PurgeAllExpired).
type PurgeReport struct {
	// Batches is how many batches ran, the last one the one that found
	// nothing left to purge; on an error, the batches before the failing
	// one.
	Batches int `json:"batches"`
	// Purged is what was purged for each queue and kind, by queue and then
	// kind; empty (not nil) when nothing was.
	Purged []PurgeTotal `json:"purged"`
}

// PurgeAllExpired runs PurgeExpired batches of at most batchSize jobs,
// each in its own short transaction, until one finds nothing left, and
// sums what they purged (operator role).
func (a *Admin) PurgeAllExpired(ctx context.Context, batchSize int) (PurgeReport, error) {
	report := PurgeReport{Purged: []PurgeTotal{}}
	totals := map[[2]string]int64{}
	for {
		got, err := a.PurgeExpired(ctx, batchSize)
		if err != nil {
			return report, err
		}
		report.Batches++
		if len(got) == 0 {
			break
		}
		for _, r := range got {
			totals[[2]string{r.Queue, r.Kind}] += r.Count
		}
	}
	for k, n := range totals {
		report.Purged = append(report.Purged, PurgeTotal{Queue: k[0], Kind: k[1], Count: n})
	}
	slices.SortFunc(report.Purged, func(x, y PurgeTotal) int {
		return cmp.Or(cmp.Compare(x.Queue, y.Queue), cmp.Compare(x.Kind, y.Kind))
	})
	return report, nil
}

const sqlEraseJobPayload = `SELECT durable_jobs.erase_job_payload($1, $2, $3, $4)`

// ErasePayload erases a job's payload and result documents and keeps its
// lifecycle row (operator role); false when the job is unknown or its
// payload is already erased.
func (a *Admin) ErasePayload(ctx context.Context, jobID int64, change ChangeRecord) (bool, error) {
	var erased bool
	err := a.pool.QueryRow(ctx, sqlEraseJobPayload, jobID, change.Reason, optionalText(change.Ticket),
		optionalText(change.Approver)).Scan(&erased)
	return erased, translateError(err)
}

// ChangeControl is the setting every change record is checked against.
type ChangeControl struct {
	// TicketPattern is the pattern a change ticket must match.
	TicketPattern string
	// RequireApprover is whether every change must name an approver.
	RequireApprover bool
	// ApproverMustDiffer is whether the approver must be another login.
	ApproverMustDiffer bool
	// ReasonPattern is the pattern every change reason must match; empty
	// for free text.
	ReasonPattern string
	// RequireSecondOperator is maker-checker: every change is proposed by
	// one operator login and approved by another.
	RequireSecondOperator bool
	// ProposalLifetime is how long a proposal waits for approval.
	ProposalLifetime time.Duration
	// ChangedAt is the database time of the last change.
	ChangedAt time.Time
	// ChangedByRole is the database login role that made the last change.
	ChangedByRole string
}

// ChangeControl returns the change control (auditor or operator role).
func (a *Admin) ChangeControl(ctx context.Context) (ChangeControl, error) {
	return readChangeControl(ctx, a.pool)
}

const sqlChangeControl = `SELECT ticket_pattern, require_approver, approver_must_differ, COALESCE(reason_pattern, ''),
	require_second_operator, proposal_lifetime, changed_at, changed_by_role FROM durable_jobs.change_control()`

// readChangeControl reads the change control on q.
func readChangeControl(ctx context.Context, q querier) (ChangeControl, error) {
	var c ChangeControl
	err := q.QueryRow(ctx, sqlChangeControl).Scan(&c.TicketPattern, &c.RequireApprover, &c.ApproverMustDiffer,
		&c.ReasonPattern, &c.RequireSecondOperator, &c.ProposalLifetime, &c.ChangedAt, &c.ChangedByRole)
	return c, translateError(err)
}

// ChangeControlUpdate is the input of SetChangeControl: the settings to
// change, each nil to keep the current one.
type ChangeControlUpdate struct {
	// TicketPattern is the new ticket pattern, or nil to keep it.
	TicketPattern *string
	// RequireApprover is the new approver rule, or nil to keep it.
	RequireApprover *bool
	// ApproverMustDiffer is the new rule on the approver's login, or nil.
	ApproverMustDiffer *bool
	// ReasonPattern is the new reason pattern ("" makes reasons free text
	// again), or nil to keep it.
	ReasonPattern *string
	// RequireSecondOperator switches maker-checker on or off, or is nil.
	RequireSecondOperator *bool
	// ProposalLifetime is the new proposal lifetime (1 min to 720 h), or nil.
	ProposalLifetime *time.Duration
}

const (
	sqlSetChangeControl       = `SELECT durable_jobs.set_change_control($1, $2, $3, $4, $5, $6)`
	sqlSetChangeReasonPattern = `SELECT durable_jobs.set_change_reason_pattern($1, $2, $3, $4)`
	sqlSetMakerChecker        = `SELECT durable_jobs.set_maker_checker($1, $2::interval, $3, $4, $5)`
)

// SetChangeControl changes the settings update gives, in one transaction,
// each recorded as control evidence with change (operator role), and
// returns the change control as written. A pattern that is no valid
// regular expression is refused with SQLSTATE LF003, a record the current
// setting does not accept with ErrInvalidPolicy; nothing changes then.
func (a *Admin) SetChangeControl(ctx context.Context, update ChangeControlUpdate, change ChangeRecord) (ChangeControl, error) {
	var out ChangeControl
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		c, err := readChangeControl(ctx, tx)
		if err != nil {
			return err
		}
		ticket, approver := optionalText(change.Ticket), optionalText(change.Approver)
		makerChecker := update.RequireSecondOperator != nil || update.ProposalLifetime != nil
		if update.ReasonPattern == nil && !makerChecker || update.TicketPattern != nil || update.RequireApprover != nil || update.ApproverMustDiffer != nil {
			if _, err := tx.Exec(ctx, sqlSetChangeControl, valueOr(update.TicketPattern, c.TicketPattern),
				valueOr(update.RequireApprover, c.RequireApprover), valueOr(update.ApproverMustDiffer, c.ApproverMustDiffer),
				change.Reason, ticket, approver); err != nil {
				return err
			}
		}
		if update.ReasonPattern != nil {
			if _, err := tx.Exec(ctx, sqlSetChangeReasonPattern, *update.ReasonPattern, change.Reason, ticket, approver); err != nil {
				return err
			}
		}
		if makerChecker {
			if _, err := tx.Exec(ctx, sqlSetMakerChecker, valueOr(update.RequireSecondOperator, c.RequireSecondOperator),
				valueOr(update.ProposalLifetime, c.ProposalLifetime), change.Reason, ticket, approver); err != nil {
				return err
			}
		}
		out, err = readChangeControl(ctx, tx)
		return err
	})
	return out, translateError(err)
}

// valueOr is *p, or def when p is nil.
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Proposal is one proposed change of maker-checker.
type Proposal struct {
	// ID is the proposal's change_id.
	ID int64 `json:"change_id"`
	// Kind is lease_policy, retention_policy or change_control.
	Kind string `json:"change_kind"`
	// Queue is the queue a policy proposal is about; nil for change_control.
	Queue *string `json:"queue_name"`
	// ProposedValues is the JSON object of the proposed settings.
	ProposedValues json.RawMessage `json:"proposed_values"`
	// Reason is the proposer's reason.
	Reason string `json:"change_reason"`
	// Ticket is the change ticket, or nil.
	Ticket *string `json:"change_ticket"`
	// ProposedBy is the proposing login role.
	ProposedBy string `json:"proposed_by_role"`
	// ProposedAt is when it was proposed.
	ProposedAt time.Time `json:"proposed_at"`
	// ExpiresAt is when it expires unless decided.
	ExpiresAt time.Time `json:"expires_at"`
	// State is pending, expired, approved or rejected.
	State string `json:"change_state"`
	// DecidedBy is the login role that approved or rejected it, or nil.
	DecidedBy *string `json:"decided_by_role"`
	// DecidedAt is when it was decided, or nil.
	DecidedAt *time.Time `json:"decided_at"`
}

const sqlPendingChanges = `SELECT change_id, change_kind, queue_name, proposed_values, change_reason, change_ticket,
	proposed_by_role, proposed_at, expires_at, change_state, decided_by_role, decided_at
	FROM durable_jobs.pending_changes($1)`

// Proposals returns the pending and expired proposals, newest first; all
// adds the approved and rejected ones (operator or auditor role).
func (a *Admin) Proposals(ctx context.Context, all bool) ([]Proposal, error) {
	rows, _ := a.pool.Query(ctx, sqlPendingChanges, all)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Proposal])
	return out, translateError(err)
}

const sqlProposeChange = `SELECT durable_jobs.propose_change($1, $2, $3, $4, $5)`

// Propose records a proposed change of kind (lease_policy,
// retention_policy or change_control) to queue (empty for change_control)
// with the values the database documents for it, for another operator to
// approve; it returns the proposal's id (operator role).
func (a *Admin) Propose(ctx context.Context, kind, queue string, values map[string]any, reason, ticket string) (int64, error) {
	body, err := json.Marshal(values)
	if err != nil {
		return 0, err
	}
	var id int64
	err = a.pool.QueryRow(ctx, sqlProposeChange, kind, optionalText(queue), body, reason, optionalText(ticket)).Scan(&id)
	return id, translateError(err)
}

// ProposeLeasePolicy proposes update for another operator to approve
// (maker-checker): the settings it gives, with its Reason and Ticket; it
// returns the proposal's id (operator role).
func (a *Admin) ProposeLeasePolicy(ctx context.Context, update LeasePolicyUpdate) (int64, error) {
	values := map[string]any{}
	for name, d := range map[string]*time.Duration{"lease_duration": update.LeaseDuration,
		"renewal_interval": update.RenewalInterval, "max_claim_lifetime": update.MaxClaimLifetime} {
		if d != nil {
			values[name] = intervalText(*d)
		}
	}
	if update.RenewalEnabled != nil {
		values["renewal_enabled"] = *update.RenewalEnabled
	}
	return a.Propose(ctx, "lease_policy", update.Queue, values, update.Reason, update.Ticket)
}

// ProposeRetentionPolicy proposes queue's retention policy (as
// SetRetentionPolicy would set it) for another operator to approve; it
// returns the proposal's id (operator role).
func (a *Admin) ProposeRetentionPolicy(ctx context.Context, queue string, payload, record time.Duration, change ChangeRecord) (int64, error) {
	return a.Propose(ctx, "retention_policy", queue, map[string]any{"payload_retention": intervalText(payload),
		"record_retention": intervalText(record)}, change.Reason, change.Ticket)
}

// ProposeChangeControl proposes the whole change-control setting for
// another operator to approve: update, and the current value of every
// setting update leaves out; it returns the proposal's id (operator role).
func (a *Admin) ProposeChangeControl(ctx context.Context, update ChangeControlUpdate, change ChangeRecord) (int64, error) {
	c, err := a.ChangeControl(ctx)
	if err != nil {
		return 0, err
	}
	var reasonPattern any // null: free text
	if p := valueOr(update.ReasonPattern, c.ReasonPattern); p != "" {
		reasonPattern = p
	}
	return a.Propose(ctx, "change_control", "", map[string]any{"ticket_pattern": valueOr(update.TicketPattern, c.TicketPattern),
		"require_approver": valueOr(update.RequireApprover, c.RequireApprover), "approver_must_differ": valueOr(update.ApproverMustDiffer, c.ApproverMustDiffer),
		"reason_pattern": reasonPattern, "require_second_operator": valueOr(update.RequireSecondOperator, c.RequireSecondOperator),
		"proposal_lifetime": intervalText(valueOr(update.ProposalLifetime, c.ProposalLifetime))}, change.Reason, change.Ticket)
}

// intervalText is a duration as PostgreSQL interval input, exact to the
// microsecond, for the values of a proposal.
func intervalText(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}

const sqlApproveChange = `SELECT durable_jobs.approve_change($1)`

// ApproveProposal applies a proposal in this session, checked in full as
// the change itself would be, with this login as the approver (operator
// role). The database refuses the proposer's own approval, an expired or
// decided proposal, and a change it would refuse anyway.
func (a *Admin) ApproveProposal(ctx context.Context, proposalID int64) error {
	_, err := a.pool.Exec(ctx, sqlApproveChange, proposalID)
	return translateError(err)
}

const sqlRejectChange = `SELECT durable_jobs.reject_change($1, $2)`

// RejectProposal rejects a proposal (by its proposer: withdraws it) and
// records reason (operator role).
func (a *Admin) RejectProposal(ctx context.Context, proposalID int64, reason string) error {
	_, err := a.pool.Exec(ctx, sqlRejectChange, proposalID, reason)
	return translateError(err)
}
