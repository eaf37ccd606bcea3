package goclient

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Admin is the client of operators and auditors: lease health, status and
// outcome totals, lease policies, control evidence, recorded deployments,
// Cancel, Replay and State of one job, the operator's job views, retention,
// change control, maker-checker proposals and payload erasure. It claims
// nothing, so it has no heartbeat, starts no goroutine and opens no pool of
// its own: every call is one statement (SetChangeControl: one transaction)
// on the pool given to NewAdmin, whose login needs the role each method
// names (durable_job_auditor for the reads). An Admin needs no Close and is safe for concurrent use. A
// program that has a Client makes its Admin with NewAdmin over the same
// pool, or over a pool of another login role: a Client does the job work
// (enqueue, claim, renew, finish) and nothing else.
type Admin struct {
	pool *pgxpool.Pool
}

// NewAdmin returns an Admin over pool, or a *ConfigError ("pool must not be nil") when
// pool is nil. It opens no connection.
func NewAdmin(pool *pgxpool.Pool) (*Admin, error) {
	if pool == nil {
		return nil, &ConfigError{Field: "pool", Message: msgNilPool}
	}
	return &Admin{pool: pool}, nil
}

// Cancel cancels a job that is not terminal yet (a running job's claim
// becomes stale at once). It returns false for a terminal or unknown job.
// With a zero change it needs the durable_job_producer role and records
// nothing; with a change (its Reason set) it is an operator's action on
// record (durable_job_operator): kept in the job's action trail
// (JobActions) and the control evidence, the record checked as every
// change record is.
func (a *Admin) Cancel(ctx context.Context, jobID int64, change ChangeRecord) (bool, error) {
	return cancelJob(ctx, a.pool, jobID, change)
}

// Replay puts one FAILED or CANCELLED job back to QUEUED with its attempts
// starting again, due at once; false for any other job. Needs the
// durable_job_operator role; a change (its Reason set) is recorded as
// Cancel's is.
func (a *Admin) Replay(ctx context.Context, jobID int64, change ChangeRecord) (bool, error) {
	return replayJob(ctx, a.pool, jobID, change)
}

// State returns the payload-blind lifecycle state of a job, or
// ErrJobNotFound. Needs the durable_job_producer role.
func (a *Admin) State(ctx context.Context, jobID int64) (JobState, error) {
	return jobState(ctx, a.pool, jobID)
}
