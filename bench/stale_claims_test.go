package bench

import (
	"context"
	"testing"
	"time"
)

// TestStaleBareClaimWritesAClaim: the step's bare claim, run by the worker
// login after the step's setup, claims the first due job and writes a
// claim of job_record that the table's CHECKs accept, live for an hour:
// RUNNING, the login as claimer, the expiry floor at the expiry.
func TestStaleBareClaimWritesAClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testEnv(t)
	if err := staleClaimSetup(ctx, &e.dbPools, e.workerRole, 3); err != nil {
		t.Fatal(err)
	}
	var first int64
	if err := e.admin.QueryRow(ctx, `SELECT min(job_record_id) FROM durable_jobs.job_record WHERE queue_name = $1`,
		staleClaimQueue).Scan(&first); err != nil {
		t.Fatal(err)
	}
	var id int64
	var payload []byte
	if err := workerConn(t, e).QueryRow(ctx, staleBareClaimSQL, staleClaimQueue, benchOwner).Scan(&id, &payload); err != nil {
		t.Fatal(err)
	}
	var status, role string
	var left time.Duration
	var floorAtExpiry bool
	if err := e.admin.QueryRow(ctx, `SELECT job_status::text, lease_claimed_by_role, lease_expires_at - now(),
			lease_expiry_floor = lease_expires_at
		FROM durable_jobs.job_record WHERE job_record_id = $1`, id).Scan(&status, &role, &left, &floorAtExpiry); err != nil {
		t.Fatal(err)
	}
	if id != first || string(payload) != `{"n": 1}` || status != "RUNNING" || role != e.workerRole ||
		left < 59*time.Minute || !floorAtExpiry {
		t.Errorf("the bare claim claimed job %d (first due %d), payload %s: %s by %s, %s left, floor at the expiry %v",
			id, first, payload, status, role, left, floorAtExpiry)
	}
}

// procStatCPU counts user and system ticks after the command name, which
// may hold spaces and parentheses.
func TestProcStatCPU(t *testing.T) {
	stat := "4242 (postgres: lf worker (x) 127.0.0.1) S 1 4242 4242 0 -1 4194560 900 0 0 0 130 27 0 0 20 0 1 0 5 0 0"
	got, err := procStatCPU(stat)
	if err != nil || got != 1570*time.Millisecond {
		t.Fatalf("procStatCPU = %v, %v; want 1.57s (130 user ticks, 27 system)", got, err)
	}
	if _, err := procStatCPU("4242 (postgres) S 1"); err == nil {
		t.Fatal("a short stat line was read without an error")
	}
}
