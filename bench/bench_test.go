package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

const (
	benchQueue = "bench"
	benchOwner = "bench-worker-1"
	claimCount = 1000
	batchSize  = 100
)

// fixture is a database with claimCount claims of one worker, live for an
// hour, and a plain table raw_lease holding the same claims for the baseline.
type fixture struct {
	worker *pgxpool.Pool // the worker's login role: renewals must come from the claiming role
	admin  *pgxpool.Pool
	ids    []int64
	tokens [][16]byte
}

func newFixture(b *testing.B) *fixture {
	b.Helper()
	ctx := context.Background()
	db := testdb.New(b)
	f := &fixture{admin: db.Pool(b), worker: db.LoginPool(b, "durable_job_worker")}
	_, err := f.admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, '1 hour', '10 minutes', '7 days', true, 'benchmark')`, benchQueue)
	require.NoError(b, err)
	_, err = f.admin.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"n": 1}') FROM generate_series(1, $2)`, benchQueue, claimCount)
	require.NoError(b, err)
	rows, err := f.worker.Query(ctx, `SELECT job_record_id, lease_claim_token FROM durable_jobs.claim_next_jobs($1, $2, $3)`, benchQueue, benchOwner, claimCount)
	require.NoError(b, err)
	for rows.Next() {
		var id int64
		var token [16]byte
		require.NoError(b, rows.Scan(&id, &token))
		f.ids = append(f.ids, id)
		f.tokens = append(f.tokens, token)
	}
	require.NoError(b, rows.Err())
	require.Len(b, f.ids, claimCount)

	_, err = f.admin.Exec(ctx, `CREATE TABLE raw_lease (id bigint PRIMARY KEY, token_digest bytea NOT NULL, owner text NOT NULL, expires_at timestamptz NOT NULL)`)
	require.NoError(b, err)
	_, err = f.admin.Exec(ctx, `INSERT INTO raw_lease SELECT i, sha256(uuid_send(t)), $3, clock_timestamp() + interval '1 hour' FROM unnest($1::bigint[], $2::uuid[]) AS u(i, t)`, f.ids, f.tokens, benchOwner)
	require.NoError(b, err)
	_, err = f.admin.Exec(ctx, `GRANT SELECT, UPDATE ON raw_lease TO `+pgx.Identifier{loginRole(b, f.worker)}.Sanitize())
	require.NoError(b, err)
	return f
}

func loginRole(b *testing.B, p *pgxpool.Pool) string {
	var role string
	require.NoError(b, p.QueryRow(context.Background(), `SELECT session_user`).Scan(&role))
	return role
}

// BenchmarkRenewOneClaimPerCall is one fenced renewal per round trip.
func BenchmarkRenewOneClaimPerCall(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % claimCount
		var outcome string
		if err := f.worker.QueryRow(ctx, `SELECT renewal_outcome FROM durable_jobs.renew_job_lease($1, $2, $3)`,
			f.ids[k], f.tokens[k], benchOwner).Scan(&outcome); err != nil || outcome != "renewed" {
			b.Fatalf("renewal %d: %q %v", k, outcome, err)
		}
	}
}

// BenchmarkRawUpdateOneClaimPerCall is the baseline: the same predicate as a
// bare conditional UPDATE of a plain table, with no definer function, policy
// lookup, claim deadline or role binding.
func BenchmarkRawUpdateOneClaimPerCall(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % claimCount
		tag, err := f.worker.Exec(ctx, `UPDATE raw_lease SET expires_at = clock_timestamp() + interval '1 hour'
			WHERE id = $1 AND token_digest = sha256(uuid_send($2)) AND owner = $3 AND expires_at > clock_timestamp()`,
			f.ids[k], f.tokens[k], benchOwner)
		if err != nil || tag.RowsAffected() != 1 {
			b.Fatalf("raw update %d: %v", k, err)
		}
	}
}

// BenchmarkRenewBatchOf100 renews batchSize claims per renew_job_leases call;
// the ns/claim figure compares with the one-per-call benchmarks.
func BenchmarkRenewBatchOf100(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lo := (i * batchSize) % claimCount
		rows, err := f.worker.Query(ctx, `SELECT renewal_outcome FROM durable_jobs.renew_job_leases($1, $2, $3)`,
			benchOwner, f.ids[lo:lo+batchSize], f.tokens[lo:lo+batchSize])
		if err != nil {
			b.Fatal(err)
		}
		outcomes, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(outcomes) != batchSize || outcomes[0] != "renewed" {
			b.Fatalf("batch renewal: %v %v", outcomes, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/claim")
}

// BenchmarkRawUpdateBatchOf100 is the baseline for the batch: one bare UPDATE
// ... FROM unnest of batchSize claims.
func BenchmarkRawUpdateBatchOf100(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lo := (i * batchSize) % claimCount
		tag, err := f.worker.Exec(ctx, `UPDATE raw_lease r SET expires_at = clock_timestamp() + interval '1 hour'
			FROM unnest($1::bigint[], $2::uuid[]) AS u(id, token)
			WHERE r.id = u.id AND r.token_digest = sha256(uuid_send(u.token)) AND r.owner = $3 AND r.expires_at > clock_timestamp()`,
			f.ids[lo:lo+batchSize], f.tokens[lo:lo+batchSize], benchOwner)
		if err != nil || tag.RowsAffected() != batchSize {
			b.Fatalf("raw batch update: %v", err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/claim")
}

// claimFixture enqueues n jobs for the claim benchmarks, outside the timer,
// and the same number of plain rows for the baseline.
func claimFixture(b *testing.B, n int) (*pgxpool.Pool, *pgxpool.Pool) {
	ctx := context.Background()
	db := testdb.New(b)
	admin, worker := db.Pool(b), db.LoginPool(b, "durable_job_worker")
	_, err := admin.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"n": 1}') FROM generate_series(1, $2)`, benchQueue, n)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, `CREATE TABLE raw_job (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, status text NOT NULL,
		token_digest bytea, owner text, expires_at timestamptz, payload jsonb NOT NULL)`)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, `CREATE INDEX raw_job_queued ON raw_job (id) WHERE status = 'QUEUED'`)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, `INSERT INTO raw_job (status, payload) SELECT 'QUEUED', '{"n": 1}' FROM generate_series(1, $1)`, n)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, `GRANT SELECT, UPDATE ON raw_job TO `+pgx.Identifier{loginRole(b, worker)}.Sanitize())
	require.NoError(b, err)
	return admin, worker
}

// BenchmarkClaim is one fenced claim per call through claim_next_job.
func BenchmarkClaim(b *testing.B) {
	_, worker := claimFixture(b, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var id int64
		if err := worker.QueryRow(ctx, `SELECT job_record_id FROM durable_jobs.claim_next_job($1, $2)`, benchQueue, benchOwner).Scan(&id); err != nil {
			b.Fatalf("claim %d: %v", i, err)
		}
	}
}

// BenchmarkRawClaim is the baseline: a bare FOR UPDATE SKIP LOCKED claim of
// a plain table, with a random token digest and a fixed 30 s lease.
func BenchmarkRawClaim(b *testing.B) {
	_, worker := claimFixture(b, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var id int64
		if err := worker.QueryRow(ctx, `UPDATE raw_job SET status = 'RUNNING', token_digest = sha256(uuid_send(gen_random_uuid())),
			owner = $1, expires_at = clock_timestamp() + interval '30 seconds'
			WHERE id = (SELECT id FROM raw_job WHERE status = 'QUEUED' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING id`, benchOwner).Scan(&id); err != nil {
			b.Fatalf("raw claim %d: %v", i, err)
		}
	}
}

// TestFixtureClaimsAreLive checks the fixture the renewal benchmarks stand
// on, so a broken fixture fails make test instead of only the benchmarks.
func TestFixtureClaimsAreLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	worker := db.LoginPool(t, "durable_job_worker")
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{}') FROM generate_series(1, 3)`, benchQueue)
	require.NoError(t, err)
	rows, err := worker.Query(ctx, `SELECT job_record_id, lease_claim_token FROM durable_jobs.claim_next_jobs($1, $2, 3)`, benchQueue, benchOwner)
	require.NoError(t, err)
	type claim struct {
		ID    int64
		Token [16]byte
	}
	claims, err := pgx.CollectRows(rows, pgx.RowToStructByPos[claim])
	require.NoError(t, err)
	require.Len(t, claims, 3)
	ids, tokens := make([]int64, 3), make([][16]byte, 3)
	for i, c := range claims {
		ids[i], tokens[i] = c.ID, c.Token
	}
	rows, err = worker.Query(ctx, `SELECT renewal_outcome FROM durable_jobs.renew_job_leases($1, $2, $3)`, benchOwner, ids, tokens)
	require.NoError(t, err)
	outcomes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"renewed", "renewed", "renewed"}, outcomes, fmt.Sprint("claims ", ids))
}
