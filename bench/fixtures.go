package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// parallel runs fs at once and returns their errors joined. Only setup
// runs in parallel, never anything measured, and only setups that share
// no table: each table is still filled by one session in the same order,
// so its rows and pages are as when the setups ran one after the other.
func parallel(fs ...func() error) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// benchOwner is the worker owner id of every benchmark claim.
const benchOwner = "bench-worker-1"

// claimSet is a set of live claims of benchOwner, made by the worker login.
type claimSet struct {
	ids    []int64
	tokens [][16]byte
}

// setPolicy gives queue its own lease policy.
func (e *dbPools) setPolicy(ctx context.Context, queue, lease, renewal string) error {
	_, err := e.admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, $2::interval, $3::interval,
		'7 days', true, 'benchmark')`, queue, lease, renewal)
	return err
}

// claimJobs enqueues n jobs in queue and claims them all through
// claim_next_jobs as the worker login.
func (e *dbPools) claimJobs(ctx context.Context, queue string, n int) (claimSet, error) {
	if err := e.enqueueJobs(ctx, queue, n); err != nil {
		return claimSet{}, err
	}
	return e.claimDue(ctx, queue, n)
}

// enqueueJobs enqueues n jobs in queue with enqueue_job.
func (e *dbPools) enqueueJobs(ctx context.Context, queue string, n int) error {
	_, err := e.admin.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"n": 1}') FROM generate_series(1, $2)`, queue, n)
	return err
}

// claimDue claims n due jobs of queue through claim_next_jobs as the
// worker login.
func (e *dbPools) claimDue(ctx context.Context, queue string, n int) (claimSet, error) {
	var set claimSet
	for len(set.ids) < n {
		rows, err := e.worker.Query(ctx, `SELECT job_record_id, lease_claim_token
			FROM durable_jobs.claim_next_jobs($1, $2, $3)`, queue, benchOwner, min(1000, n-len(set.ids)))
		if err != nil {
			return set, err
		}
		got := 0
		for rows.Next() {
			var id int64
			var token [16]byte
			if err := rows.Scan(&id, &token); err != nil {
				rows.Close()
				return set, err
			}
			set.ids = append(set.ids, id)
			set.tokens = append(set.tokens, token)
			got++
		}
		if err := rows.Err(); err != nil {
			return set, err
		}
		if got == 0 {
			return set, fmt.Errorf("claimed %d of %d jobs of %s", len(set.ids), n, queue)
		}
	}
	return set, nil
}

// copyRecords makes table, a plain copy of durable_jobs.job_record (same
// columns, indexes, constraints and fillfactor) holding queue's rows, for
// the bare-UPDATE baselines, and lets the worker login update it.
func (e *env) copyRecords(ctx context.Context, table, queue string) error {
	t := pgx.Identifier{table}.Sanitize()
	for _, q := range []string{
		`CREATE TABLE ` + t + ` (LIKE durable_jobs.job_record INCLUDING ALL) WITH (fillfactor = 80)`,
		`INSERT INTO ` + t + ` OVERRIDING SYSTEM VALUE SELECT * FROM durable_jobs.job_record WHERE queue_name = $1`,
		`ANALYZE ` + t,
	} {
		var err error
		if q[0] == 'I' {
			_, err = e.admin.Exec(ctx, q, queue)
		} else {
			_, err = e.admin.Exec(ctx, q)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	return e.grantRaw(ctx, table)
}

// addLiveLeases adds, for each queue, its number of RUNNING jobs of
// another worker, live for an hour, with one bulk INSERT a queue as
// superuser (claiming them one by one would take minutes at 100,000), and
// the same numbers to the bare-claim table: each table filled by one
// session, queue after queue, the two tables at once.
func (e *env) addLiveLeases(ctx context.Context, queues []string, ns []int) error {
	return parallel(func() error {
		for i, queue := range queues {
			if ns[i] == 0 {
				continue
			}
			if _, err := e.admin.Exec(ctx, `INSERT INTO durable_jobs.job_record
				(queue_name, job_status, run_after, max_attempts, attempt_number, lease_claim_digest, lease_owner_id,
				 lease_claimed_by_role, lease_claimed_at, lease_expires_at, lease_expiry_floor, lease_claim_deadline,
				 lease_fencing_generation)
				SELECT $1, 'RUNNING', now(), 5, 1, sha256(int8send(g)), 'bench-live-worker', 'bench_live_role', now(),
				       now() + interval '1 hour', now() + interval '1 hour', now() + interval '1 day', 1
				FROM generate_series(1, $2) g`, queue, ns[i]); err != nil {
				return fmt.Errorf("live leases: %w", err)
			}
		}
		return nil
	}, func() error {
		for i, queue := range queues {
			if ns[i] == 0 {
				continue
			}
			if _, err := e.admin.Exec(ctx, `INSERT INTO bench_raw_claim (queue_name, status, run_after, digest, owner, expires_at, payload)
				SELECT $1, 'RUNNING', now(), sha256(int8send(g)), 'bench-live-worker', now() + interval '1 hour', '{"n": 1}'
				FROM generate_series(1, $2) g`, queue, ns[i]); err != nil {
				return fmt.Errorf("live leases of the bare-claim table: %w", err)
			}
		}
		return nil
	})
}

// addDueJobs adds n due QUEUED jobs with their payloads to each queue, and
// the same to the bare-claim table, with bulk INSERTs: each table filled by
// one session, queue after queue, the two tables at once.
func (e *env) addDueJobs(ctx context.Context, queues []string, n int) error {
	return parallel(func() error {
		for _, queue := range queues {
			if err := e.insertDueJobs(ctx, queue, n); err != nil {
				return err
			}
		}
		return nil
	}, func() error {
		for _, queue := range queues {
			if err := e.insertRawDueJobs(ctx, queue, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertRawDueJobs adds n due QUEUED jobs to queue in the bare-claim table.
func (e *env) insertRawDueJobs(ctx context.Context, queue string, n int) error {
	if _, err := e.admin.Exec(ctx, `INSERT INTO bench_raw_claim (queue_name, status, run_after, payload)
		SELECT $1, 'QUEUED', now() - interval '1 second', '{"n": 1}' FROM generate_series(1, $2)`, queue, n); err != nil {
		return fmt.Errorf("due jobs of the bare-claim table: %w", err)
	}
	return nil
}

// createRawClaimTable is the bare-claim baseline's table: a job table with
// only what a bare FOR UPDATE SKIP LOCKED claim needs. The claims step and
// the claim ladder step both use it; whichever runs first makes it.
func (e *env) createRawClaimTable(ctx context.Context) error {
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS bench_raw_claim (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, queue_name text NOT NULL,
			status text NOT NULL, run_after timestamptz NOT NULL, digest bytea, owner text, expires_at timestamptz,
			payload jsonb NOT NULL) WITH (fillfactor = 80)`,
		`CREATE INDEX IF NOT EXISTS bench_raw_claim_due ON bench_raw_claim (queue_name, run_after, id) WHERE status = 'QUEUED'`,
	} {
		if _, err := e.admin.Exec(ctx, q); err != nil {
			return err
		}
	}
	return e.grantRaw(ctx, "bench_raw_claim")
}

// analyze analyzes the bundle's two job tables, each in a session of its
// own, at once.
func (e *dbPools) analyze(ctx context.Context) error {
	return e.maintain(ctx, "ANALYZE ", "durable_jobs.job_record", "durable_jobs.job_payload_record")
}

// maintain runs command (ANALYZE or VACUUM ANALYZE, with a trailing space)
// on each table, each in a session of its own, at once: the statistics
// and the vacuumed tables are those of one statement after the other.
func (e *dbPools) maintain(ctx context.Context, command string, tables ...string) error {
	fs := make([]func() error, len(tables))
	for i, t := range tables {
		fs[i] = func() error {
			_, err := e.admin.Exec(ctx, command+t)
			return err
		}
	}
	return parallel(fs...)
}

// insertDueJobs adds n due QUEUED jobs with their payloads to queue with
// one bulk INSERT (superuser): what enqueue_job makes, without its cost.
func (e *dbPools) insertDueJobs(ctx context.Context, queue string, n int) error {
	if _, err := e.admin.Exec(ctx, `WITH j AS (
			INSERT INTO durable_jobs.job_record (queue_name, run_after, max_attempts)
			SELECT $1, now() - interval '1 second', 5 FROM generate_series(1, $2)
			RETURNING job_record_id)
		INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload)
		SELECT job_record_id, '{"n": 1}' FROM j`, queue, n); err != nil {
		return fmt.Errorf("due jobs: %w", err)
	}
	return nil
}

// analyzeAll analyzes the bundle's tables and the bare-claim table.
func (e *env) analyzeAll(ctx context.Context) error {
	return e.maintain(ctx, "ANALYZE ", "durable_jobs.job_record", "durable_jobs.job_payload_record", "bench_raw_claim")
}
