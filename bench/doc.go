// Package bench measures leasefence's hot paths against raw SQL baselines on
// the same throwaway PostgreSQL, in the same run.
//
// Our machines are shared and noisy, so the figures that matter are ratios
// inside one run: a fenced renewal through durable_jobs.renew_job_lease
// against a bare conditional UPDATE of a plain table, one batched
// renew_job_leases call against a bare batched UPDATE, and a fenced claim
// against a bare FOR UPDATE SKIP LOCKED claim. RESULTS.md records the figures
// with the command that produced them:
//
//	go test ./bench -run '^$' -bench . -benchtime 3000x -count 3
package bench
