package demo

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/demo/demotest"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// These tests attack the demo where it meets a shared database: objects
// another login planted for it, and what it leaves behind when it ends, is
// interrupted or is never allowed to clean up.

// plainLogin returns a URL to db as a new login role that holds no
// leasefence role (dropped with db, after the objects it made).
func plainLogin(t *testing.T, db *testdb.DB, admin *pgxpool.Pool) string {
	t.Helper()
	loginURL, name := demotest.Admin(t, db, admin, "NOCREATEROLE")
	_, err := admin.Exec(context.Background(), "REVOKE durable_job_auditor FROM "+name)
	require.NoError(t, err)
	return loginURL
}

// demoEvidenceCount returns the number of control-evidence records of the
// queues of demo run.
func demoEvidenceCount(t *testing.T, admin *pgxpool.Pool, run string) int {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM durable_jobs.control_evidence_record
		WHERE queue_name LIKE $1`, "demo."+run+".%").Scan(&n))
	return n
}

func TestDemoWritesOnlyToItsOwnSchemaWherePublicIsWritable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)

	// Where public is writable by every login (as before PostgreSQL 15, or
	// granted so), a login with no leasefence role plants the table the
	// demo used to write to, with a trigger that copies every row, and the
	// role of whoever inserts it, to a table of its own.
	_, err := admin.Exec(ctx, "GRANT CREATE ON SCHEMA public TO PUBLIC")
	require.NoError(t, err)
	thiefPool, err := pgxpool.New(ctx, plainLogin(t, db, admin))
	require.NoError(t, err)
	defer thiefPool.Close()
	_, err = thiefPool.Exec(ctx, `
		CREATE TABLE public.stolen (written_by text, job_record_id bigint, inserted_by name);
		GRANT INSERT ON public.stolen TO PUBLIC;
		CREATE TABLE public.leasefence_demo_target (job_record_id bigint NOT NULL, lease_fencing_generation bigint NOT NULL,
			queue_name text NOT NULL, written_by text NOT NULL, written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
			PRIMARY KEY (job_record_id, lease_fencing_generation));
		GRANT SELECT, INSERT ON public.leasefence_demo_target TO PUBLIC;
		CREATE FUNCTION public.steal() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.stolen VALUES (NEW.written_by, NEW.job_record_id, current_user);
			RETURN NEW;
		END $$;
		CREATE TRIGGER steal BEFORE INSERT ON public.leasefence_demo_target FOR EACH ROW EXECUTE FUNCTION public.steal();`)
	require.NoError(t, err)

	r := play(t, Options{DatabaseURL: db.URL, HTMLPath: filepath.Join(t.TempDir(), "t.html")})
	require.NoError(t, r.err, r.out)
	run := demotest.RunID(t, r.out)

	var stolen, planted int
	require.NoError(t, admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM public.stolen),
		(SELECT count(*) FROM public.leasefence_demo_target)`).Scan(&stolen, &planted))
	require.Zero(t, stolen, "the planted trigger never ran: the demo wrote nothing to public")
	require.Zero(t, planted)
	require.Contains(t, r.out, "shows 1 target row(s) for job", "story 2 read its own target table")

	// Nothing of the run is left but the evidence of its policy changes.
	demotest.NoRoles(t, admin, run)
	demotest.NoSchema(t, admin)
	demotest.NoData(t, admin, run)
	require.Equal(t, 6, demoEvidenceCount(t, admin, run),
		"the evidence of its three policy changes stays, and of the three policies' removal (the policy table's trigger records every change)")
	require.Contains(t, r.out, "Dropped the demo's login roles and its schema leasefence_demo_"+run+".\n")
	require.Contains(t, r.out, "Deleted the jobs, lease policies and outcome tallies of queues demo."+run+".*")
}

func TestDemoLeavesWhatItMayNotDeleteAndSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	// An admin that may create roles and schemas but owns none of the
	// bundle's tables; the first story stops at once (the producer may not
	// enqueue), after the policies were set.
	adminURL, name := demotest.Admin(t, db, admin, "CREATEROLE")
	_, err := admin.Exec(ctx, "GRANT SELECT ON public.leasefence_schema_version TO "+name+"; GRANT CREATE ON DATABASE "+
		db.Name+" TO "+name+"; REVOKE EXECUTE ON FUNCTION durable_jobs.enqueue_job FROM durable_job_producer")
	require.NoError(t, err)
	r := play(t, Options{DatabaseURL: adminURL, HTMLPath: filepath.Join(t.TempDir(), "t.html")})
	requireFailed(t, r, "story 1", "permission denied for function enqueue_job")
	run := demotest.RunID(t, r.out)
	require.Contains(t, r.out, "Left the jobs, lease policies and outcome tallies of queues demo."+run+
		".* in the database: the --database-url role may not delete them (permission denied for table job_record).\n")
	var policies int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.queue_lease_policy WHERE queue_name LIKE $1`,
		"demo."+run+".%").Scan(&policies))
	require.Equal(t, 3, policies, "what it may not delete stays, as it says")
	demotest.NoRoles(t, admin, run)
	demotest.NoSchema(t, admin)
}

func TestDemoSCRAMVerifierIsTheOnePostgreSQLComputes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	role := "leasectl_test_scram_" + randomName(3)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	password := randomName(16)

	// PostgreSQL's own verifier of the password: same salt and iterations
	// give the same StoredKey and ServerKey.
	conn, err := admin.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "SET password_encryption = 'scram-sha-256'")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'")
	require.NoError(t, err)
	var theirs string
	require.NoError(t, conn.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&theirs))
	m := regexp.MustCompile(`^SCRAM-SHA-256\$(\d+):([^$]+)\$`).FindStringSubmatch(theirs)
	require.NotNil(t, m, theirs)
	iterations, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	salt, err := base64.StdEncoding.DecodeString(m[2])
	require.NoError(t, err)
	require.Equal(t, theirs, scramVerifier(password, salt, iterations))

	// A verifier of ours is stored as it is, even where the server would
	// hash clear passwords with md5.
	ours := newSCRAMVerifier(password)
	require.NotEqual(t, theirs, ours, "a new salt each time")
	_, err = conn.Exec(ctx, "SET password_encryption = 'md5'")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "ALTER ROLE "+role+" PASSWORD '"+ours+"'")
	require.NoError(t, err)
	var stored string
	require.NoError(t, conn.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&stored))
	require.Equal(t, ours, stored)
	require.NotContains(t, ours, password)
}

// Without --keep the demo deletes its jobs with their payload and outcome
// ledger rows: since migration 019 no foreign key deletes those with the job.
func TestDemoDeletesItsJobsWithTheirPayloadsAndOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	r := play(t, Options{DatabaseURL: db.URL, HTMLPath: filepath.Join(t.TempDir(), "t.html")})
	run := demotest.RunID(t, r.out)
	var jobs, orphans int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record WHERE queue_name LIKE $1`,
		"demo."+run+".%").Scan(&jobs))
	require.Zero(t, jobs, "the run's jobs are deleted")
	require.NoError(t, admin.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM durable_jobs.job_payload_record p
		 WHERE NOT EXISTS (SELECT FROM durable_jobs.job_record j WHERE j.job_record_id = p.job_record_id))
		+ (SELECT count(*) FROM durable_jobs.job_outcome_ledger l
		 WHERE NOT EXISTS (SELECT FROM durable_jobs.job_record j WHERE j.job_record_id = l.job_record_id))`).Scan(&orphans))
	require.Zero(t, orphans, "and no payload or outcome row of them is left")
}
