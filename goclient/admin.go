package goclient

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Admin is the client of operators and auditors: lease health, status and
// outcome totals, lease policies, control evidence, recorded deployments,
// and the operator's Cancel, Replay and State of one job. It claims
// nothing, so it has no heartbeat, starts no goroutine and opens no pool of
// its own: every call is one statement on the pool given to NewAdmin, whose
// login needs the role each method names (durable_job_auditor for the
// reads). An Admin needs no Close and is safe for concurrent use. A Client
// has the same methods, delegating to its own Admin over its pool.
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
// Needs the durable_job_producer role.
func (a *Admin) Cancel(ctx context.Context, jobID int64) (bool, error) {
	return cancelJob(ctx, a.pool, jobID)
}

// Replay puts one FAILED or CANCELLED job back to QUEUED with its attempts
// starting again; false for any other job. Needs the durable_job_operator role.
func (a *Admin) Replay(ctx context.Context, jobID int64) (bool, error) {
	return replayJob(ctx, a.pool, jobID)
}

// State returns the payload-blind lifecycle state of a job, or
// ErrJobNotFound. Needs the durable_job_producer role.
func (a *Admin) State(ctx context.Context, jobID int64) (JobState, error) {
	return jobState(ctx, a.pool, jobID)
}

// The Client's operator and auditor calls are its Admin's: the code of each
// is written once, in port_admin.go or port_pg.go.

// Cancel is Admin.Cancel over the client's pool.
func (c *Client) Cancel(ctx context.Context, jobID int64) (bool, error) {
	return c.admin.Cancel(ctx, jobID)
}

// Replay is Admin.Replay over the client's pool.
func (c *Client) Replay(ctx context.Context, jobID int64) (bool, error) {
	return c.admin.Replay(ctx, jobID)
}

// State is Admin.State over the client's pool.
func (c *Client) State(ctx context.Context, jobID int64) (JobState, error) {
	return c.admin.State(ctx, jobID)
}

// SetQueueLeasePolicy is Admin.SetQueueLeasePolicy over the client's pool.
func (c *Client) SetQueueLeasePolicy(ctx context.Context, change LeasePolicyChange) error {
	return c.admin.SetQueueLeasePolicy(ctx, change)
}

// UpdateQueueLeasePolicy is Admin.UpdateQueueLeasePolicy over the client's
// pool.
func (c *Client) UpdateQueueLeasePolicy(ctx context.Context, update LeasePolicyUpdate) (LeasePolicy, error) {
	return c.admin.UpdateQueueLeasePolicy(ctx, update)
}

// QueueLeasePolicies is Admin.QueueLeasePolicies over the client's pool.
func (c *Client) QueueLeasePolicies(ctx context.Context) ([]LeasePolicy, error) {
	return c.admin.QueueLeasePolicies(ctx)
}

// RecordDeploymentVersion is Admin.RecordDeploymentVersion over the
// client's pool.
func (c *Client) RecordDeploymentVersion(ctx context.Context, version, reason string) error {
	return c.admin.RecordDeploymentVersion(ctx, version, reason)
}

// RecordDeployment is Admin.RecordDeployment over the client's pool.
func (c *Client) RecordDeployment(ctx context.Context, d Deployment) error {
	return c.admin.RecordDeployment(ctx, d)
}

// LeaseHealth is Admin.LeaseHealth over the client's pool. A program that
// only reads health needs no Client: use NewAdmin.
func (c *Client) LeaseHealth(ctx context.Context) ([]QueueLeaseHealth, error) {
	return c.admin.LeaseHealth(ctx)
}

// ControlEvidence is Admin.ControlEvidence over the client's pool.
func (c *Client) ControlEvidence(ctx context.Context, since time.Time) ([]EvidenceRecord, error) {
	return c.admin.ControlEvidence(ctx, since)
}

// LeaseOutcomeTotals is Admin.LeaseOutcomeTotals over the client's pool.
func (c *Client) LeaseOutcomeTotals(ctx context.Context, since time.Time) ([]LeaseOutcomeTotal, error) {
	return c.admin.LeaseOutcomeTotals(ctx, since)
}

// JobStatusTotals is Admin.JobStatusTotals over the client's pool.
func (c *Client) JobStatusTotals(ctx context.Context) ([]JobStatusTotal, error) {
	return c.admin.JobStatusTotals(ctx)
}

// BundleMigrationVersion is Admin.BundleMigrationVersion over the client's
// pool.
func (c *Client) BundleMigrationVersion(ctx context.Context) (MigrationVersion, error) {
	return c.admin.BundleMigrationVersion(ctx)
}
