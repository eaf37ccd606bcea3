package goclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxAttempts is the number of claims a job may use when
// EnqueueParams.MaxAttempts is zero (the database's own default).
const DefaultMaxAttempts = 5

// EnqueueParams describes a job to enqueue.
type EnqueueParams struct {
	// Queue is the queue name (^[a-z][a-z0-9_.:-]{0,62}$).
	Queue string
	// Payload is the job's JSON document. Required.
	Payload []byte
	// IdempotencyKey, when set (1 to 200 characters), makes a repeated
	// enqueue of the same (queue, key) return the first job's id.
	IdempotencyKey string
	// RunAfter, when set, is the earliest time the job may be claimed.
	RunAfter time.Time
	// MaxAttempts is how many claims the job may use (1 to 1,000).
	// Zero means DefaultMaxAttempts.
	MaxAttempts int
}

// Enqueue durably accepts a job and returns its job_record_id (needs the
// durable_job_producer role). Malformed input returns ErrInvalidArgument.
func (c *Client) Enqueue(ctx context.Context, p EnqueueParams) (int64, error) {
	return enqueueJob(ctx, c.pool, p)
}

// EnqueueTx is Enqueue inside the caller's transaction tx (the same
// enqueue_job call): the job is written, and its id kept, only if tx
// commits, so the caller's own writes and the job commit together or not at
// all; a worker cannot claim it before then. tx's connection needs the
// durable_job_producer role. Malformed input returns ErrInvalidArgument and
// aborts tx; roll it back.
func (c *Client) EnqueueTx(ctx context.Context, tx pgx.Tx, p EnqueueParams) (int64, error) {
	return enqueueJob(ctx, tx, p)
}

// MaxBatchJobs is the most jobs EnqueueMany takes in one call (the
// database's limit for enqueue_jobs).
const MaxBatchJobs = 10000

// msgBatchMixedQueues is the message of the error EnqueueMany returns,
// without calling the database, when its jobs name different queues.
const msgBatchMixedQueues = "every job of a batch must name the same queue"

// EnqueueMany durably accepts up to MaxBatchJobs jobs of one queue in one
// call (enqueue_jobs, needs the durable_job_producer role) and returns one
// job_record_id per job, in the order of jobs. Each job is checked and
// deduplicated as Enqueue would: a key already on the queue, or repeated
// within the batch, gives the first job's id. All or nothing: a malformed
// job returns an error matching ErrInvalidArgument whose message names its
// position (never its payload or key), and no job of the batch is written.
// Jobs that name different queues are refused the same way before anything
// is sent ("every job of a batch must name the same queue"); no jobs return an empty slice and send
// nothing.
func (c *Client) EnqueueMany(ctx context.Context, jobs []EnqueueParams) ([]int64, error) {
	if len(jobs) == 0 {
		return []int64{}, nil
	}
	for _, p := range jobs[1:] {
		if p.Queue != jobs[0].Queue {
			return nil, fmt.Errorf("%w: %s", ErrInvalidArgument, msgBatchMixedQueues)
		}
	}
	return enqueueJobs(ctx, c.pool, jobs[0].Queue, jobs)
}

// Claim claims at most one job of queue for this client's owner id (needs
// the durable_job_worker role) and returns ErrNoJob when none is claimable.
// The claim's lease and renewal interval are its queue's policy, checked
// against the client's safety rules and bounds (Config.Validate): a policy
// the client cannot keep safe releases the claim and returns a
// *ConfigurationRejectedError (errors.Is ErrConfigurationRejected). Claim
// does not start the heartbeat; pass the job to Keep for that, or use a
// Worker.
func (c *Client) Claim(ctx context.Context, queue string) (Job, error) {
	jobs, err := c.claim(ctx, queue, func(q *pgxpool.Conn) ([]Job, error) {
		return claimNextJob(ctx, q, queue, c.cfg.OwnerID)
	})
	if err != nil {
		return Job{}, err
	}
	if len(jobs) == 0 {
		return Job{}, ErrNoJob
	}
	return jobs[0], nil
}

// ClaimMany claims up to n jobs of queue (1 to 1,000) in one call, each its
// own claim, with Claim's policy check. It returns an empty slice, not an
// error, when nothing is claimable.
func (c *Client) ClaimMany(ctx context.Context, queue string, n int) ([]Job, error) {
	return c.claim(ctx, queue, func(conn *pgxpool.Conn) ([]Job, error) {
		return claimNextJobs(ctx, conn, queue, c.cfg.OwnerID, n)
	})
}

// claimForWorker is ClaimMany and, in the same round trip and
// transaction, how long until the next job of queue falls due
// (claimNextJobsAndDue): a worker that found less work than it had room
// for sleeps that long, at most its poll interval.
func (c *Client) claimForWorker(ctx context.Context, queue string, n int) (jobs []Job, due time.Duration, known bool, err error) {
	jobs, err = c.claim(ctx, queue, func(conn *pgxpool.Conn) ([]Job, error) {
		var claimed []Job
		claimed, due, known, err = claimNextJobsAndDue(ctx, conn, queue, c.cfg.OwnerID, n)
		return claimed, err
	})
	return jobs, due, known, err
}

// claim runs one claim call (claimNextJob or claimNextJobs) on a
// connection of its own and checks every claim's lease against the
// client's rules and bounds.
func (c *Client) claim(ctx context.Context, queue string, run func(*pgxpool.Conn) ([]Job, error)) ([]Job, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	// The trust window starts when the claim statement is sent, so the
	// connection (perhaps a new one, with its authentication) comes first.
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	c.noteServer(conn)
	jobs, err := run(conn)
	if err != nil {
		return nil, err
	}
	for i := range jobs {
		var rejected *ConfigurationRejectedError
		if jobs[i].terms, rejected = c.cfg.terms(jobs[i]); rejected != nil {
			c.cfg.Observer.ConfigurationRejected(queue)
			rctx := context.WithoutCancel(ctx)
			for _, j := range jobs {
				// A failed release leaves the claim to lapse at its expiry.
				_, _ = releaseClaim(rctx, conn, j.claim)
			}
			return nil, rejected
		}
	}
	for range jobs {
		c.cfg.Observer.Claimed(queue)
	}
	return jobs, nil
}

// Renew makes one renewal of claim with renew_job_lease, outside the
// heartbeat. Most callers never need it: Keep renews on schedule.
func (c *Client) Renew(ctx context.Context, claim Claim) (RenewalResult, error) {
	return renewOne(ctx, c.pool, claim)
}

// Complete marks the job SUCCEEDED with an optional JSON result document, in
// a transaction of its own whose COMMIT is bounded by Config.CommitTimeout
// (ErrCommitTimeout: the outcome is unknown). ErrStaleClaim when the claim
// is not fenced; the Observer then counts an OwnershipLost(queue,
// LossStale), as for every stale terminal write and release made through
// the Client (the database cannot count a terminal write refused as stale:
// its transaction aborts).
func (c *Client) Complete(ctx context.Context, claim Claim, result []byte) error {
	return c.countStale(claim, c.inTx(ctx, completeJobCall(claim, result).queue, nil))
}

// inTx runs a transaction of its own on the client's pool (first's
// statements go out with its BEGIN, then then runs), its COMMIT bounded by
// Config.CommitTimeout.
func (c *Client) inTx(ctx context.Context, first func(*pgx.Batch), then func(pgx.Tx) error) error {
	return inTx(ctx, c.pool, c.cfg.CommitTimeout, first, then)
}

// CompleteTx is Complete inside the caller's transaction tx: the caller's
// target writes in tx and the terminal transition commit together or not at
// all. On ErrStaleClaim the transaction is aborted; roll it back.
func (c *Client) CompleteTx(ctx context.Context, tx pgx.Tx, claim Claim, result []byte) error {
	return c.countStale(claim, completeJob(ctx, tx, claim, result))
}

// Retry schedules the job again after delay with a bounded reason code and
// returns the new status: RETRY_SCHEDULED, or FAILED when the attempts are
// used up. ErrStaleClaim when the claim is not fenced (counted as Complete
// says). Its transaction's COMMIT is bounded as Complete's is.
func (c *Client) Retry(ctx context.Context, claim Claim, delay time.Duration, reasonCode string) (status JobStatus, err error) {
	err = c.inTx(ctx, retryJobCall(claim, delay, reasonCode, &status).queue, nil)
	return status, c.countStale(claim, err)
}

// RetryTx is Retry inside the caller's transaction tx.
func (c *Client) RetryTx(ctx context.Context, tx pgx.Tx, claim Claim, delay time.Duration, reasonCode string) (JobStatus, error) {
	status, err := retryJob(ctx, tx, claim, delay, reasonCode)
	return status, c.countStale(claim, err)
}

// Fail marks the job FAILED with a bounded reason code. ErrStaleClaim when
// the claim is not fenced (counted as Complete says). Its transaction's
// COMMIT is bounded as Complete's is.
func (c *Client) Fail(ctx context.Context, claim Claim, reasonCode string) error {
	return c.countStale(claim, c.inTx(ctx, failJobCall(claim, reasonCode).queue, nil))
}

// FailTx is Fail inside the caller's transaction tx.
func (c *Client) FailTx(ctx context.Context, tx pgx.Tx, claim Claim, reasonCode string) error {
	return c.countStale(claim, failJob(ctx, tx, claim, reasonCode))
}

// Release gives the claim up: the job is QUEUED and claimable again at once
// and the attempt is given back. It returns false when the claim was already
// stale; the Observer then counts an OwnershipLost(queue, LossStale) (the
// database counts it too, as a stale_release). A Lease's Release also stops
// its heartbeat; prefer it.
func (c *Client) Release(ctx context.Context, claim Claim) (bool, error) {
	released, err := releaseClaim(ctx, c.pool, claim)
	if err == nil && !released {
		c.cfg.Observer.OwnershipLost(claim.queue, LossStale)
	}
	return released, err
}

// countStale counts a terminal write the database refused as stale as an
// ownership loss of the claim's queue, and returns err unchanged.
func (c *Client) countStale(claim Claim, err error) error {
	if errors.Is(err, ErrStaleClaim) {
		c.cfg.Observer.OwnershipLost(claim.queue, LossStale)
	}
	return err
}
