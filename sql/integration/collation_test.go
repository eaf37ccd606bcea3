package sqlintegration

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A caller's collation on an identifier argument is bad input (LF003), not
// a 0A000 from the pattern match or a comparison by the caller's
// collation: a nondeterministic (case-blind) collation on the owner id must
// not let "W1" pass for "w1".
func TestArgumentsWithTheCallersCollationAreBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.admin.Exec(f.ctx, `CREATE COLLATION IF NOT EXISTS public.case_blind
		(provider = icu, locale = 'und-u-ks-level2', deterministic = false)`)
	require.NoError(t, err)
	f.enqueue(t, `{"n": 1}`)
	worker := f.worker(t)
	c := mustClaim(t, f.ctx, worker, f.queue, "w1")

	cases := []struct {
		what string
		sql  string
		args []any
	}{
		{"claim, queue name", `SELECT * FROM durable_jobs.claim_next_jobs($1 COLLATE public.case_blind, 'w2', 1)`, []any{f.queue}},
		{"claim, owner id", `SELECT * FROM durable_jobs.claim_next_jobs($1, 'w2' COLLATE public.case_blind, 1)`, []any{f.queue}},
		{"completion, owner id", `SELECT durable_jobs.complete_job($1, $2, 'W1' COLLATE public.case_blind)`,
			[]any{c.JobID, c.Token}},
		{"retry, owner id", `SELECT durable_jobs.retry_job($1, $2, 'W1' COLLATE public.case_blind, interval '1 second', 'x')`,
			[]any{c.JobID, c.Token}},
		{"failure, reason code", `SELECT durable_jobs.fail_job($1, $2, 'w1', 'x' COLLATE public.case_blind)`,
			[]any{c.JobID, c.Token}},
		{"release, owner id", `SELECT durable_jobs.release_job_claim($1, $2, 'W1' COLLATE public.case_blind)`,
			[]any{c.JobID, c.Token}},
		// Since migration 008 the renewals are PL/pgSQL bodies of their own
		// (version 6's SQL-bodied entry points dropped the caller's
		// collation and answered stale): LF003 like every other function.
		{"renewal, owner id", `SELECT renewal_outcome FROM durable_jobs.renew_job_lease($1, $2, 'W1' COLLATE public.case_blind)`,
			[]any{c.JobID, c.Token}},
		{"batch renewal, owner id", `SELECT renewal_outcome FROM durable_jobs.renew_job_leases('W1' COLLATE public.case_blind, ARRAY[$1::bigint], ARRAY[$2::uuid])`,
			[]any{c.JobID, c.Token}},
		{"batch completion, owner id", `SELECT * FROM durable_jobs.complete_jobs('W1' COLLATE public.case_blind, ARRAY[$1::bigint], ARRAY[$2::uuid])`,
			[]any{c.JobID, c.Token}},
	}
	for _, tc := range cases {
		rows, err := worker.Query(f.ctx, tc.sql, tc.args...)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		requireSQLState(t, err, "LF003", tc.what+": a collated argument is bad input")
	}
	// The claim is untouched: still live, renewable by its exact owner.
	mustRenew(t, f.ctx, worker, c.JobID, c.Token, "w1", "renewed", "the exact owner still renews")
}
