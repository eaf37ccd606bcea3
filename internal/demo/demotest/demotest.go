package demotest

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// LockedBuffer is a bytes.Buffer that one goroutine (a process's output
// copier, a running demo) may write while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Job is one demo job as the private tables hold it (read as superuser).
type Job struct {
	// ID is the job_record_id.
	ID int64
	// Status is the job_status (QUEUED, RUNNING, SUCCEEDED, ...).
	Status string
	// Attempt is the attempt_number.
	Attempt int32
	// Generation is the lease_fencing_generation: one per claim.
	Generation int64
	// Renewals is the lease_renewal_count of the current claim.
	Renewals int64
	// Owner is the lease_owner_id (a secret the demo must never print).
	Owner *string
	// CreatedAt is when the job was enqueued.
	CreatedAt time.Time
	// ClaimedAt is when the current claim was made, if any.
	ClaimedAt *time.Time
	// ChangedAt is when the status last changed.
	ChangedAt time.Time
}

// Jobs returns the jobs of queue.
func Jobs(t *testing.T, pool *pgxpool.Pool, queue string) []Job {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT job_record_id, job_status::text, attempt_number,
		lease_fencing_generation, lease_renewal_count, lease_owner_id, created_at, lease_claimed_at, status_changed_at
		FROM durable_jobs.job_record WHERE queue_name = $1 ORDER BY job_record_id`, queue)
	require.NoError(t, err)
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Job])
	require.NoError(t, err)
	return jobs
}

// Admin makes a login role for the demo's database URL with the given role
// attributes ("SUPERUSER", "CREATEROLE", ...), dropped with db, and returns
// its URL and name.
func Admin(t *testing.T, db *testdb.DB, admin *pgxpool.Pool, attributes string) (string, string) {
	t.Helper()
	loginURL := db.LoginURL(t, "durable_job_auditor")
	cfg, err := pgconn.ParseConfig(loginURL)
	require.NoError(t, err)
	_, err = admin.Exec(context.Background(), "ALTER ROLE "+cfg.User+" "+attributes)
	require.NoError(t, err)
	return loginURL, cfg.User
}

// NoLoginsGrantedBy fails unless no role holds a membership granted by
// grantor: the demo's login roles, made by grantor, are gone.
func NoLoginsGrantedBy(t *testing.T, admin *pgxpool.Pool, grantor string) {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_auth_members m
		JOIN pg_catalog.pg_roles g ON g.oid = m.grantor WHERE g.rolname = $1`, grantor).Scan(&n))
	require.Zero(t, n, "the demo's login roles are dropped")
}

// NoSchema fails unless no schema of a demo run is left.
func NoSchema(t *testing.T, admin *pgxpool.Pool) {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname LIKE 'leasefence\_demo\_%'`).Scan(&n))
	require.Zero(t, n, "the demo drops its schema")
}

// NoRoles fails unless the login roles of demo run are gone.
func NoRoles(t *testing.T, admin *pgxpool.Pool, run string) {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname LIKE $1`,
		"leasefence_demo_"+run+"_%").Scan(&n))
	require.Zero(t, n, "the demo drops the login roles it made")
}

// NoData fails unless the jobs, payloads, outcomes, policies and tallies of
// demo run's queues are gone.
func NoData(t *testing.T, admin *pgxpool.Pool, run string) {
	t.Helper()
	var jobs, payloads, outcomes, policies, tallies int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM durable_jobs.job_record WHERE queue_name LIKE $1),
		(SELECT count(*) FROM durable_jobs.job_payload_record p
			WHERE NOT EXISTS (SELECT 1 FROM durable_jobs.job_record j WHERE j.job_record_id = p.job_record_id)),
		(SELECT count(*) FROM durable_jobs.job_outcome_ledger o
			WHERE NOT EXISTS (SELECT 1 FROM durable_jobs.job_record j WHERE j.job_record_id = o.job_record_id)),
		(SELECT count(*) FROM durable_jobs.queue_lease_policy WHERE queue_name LIKE $1),
		(SELECT count(*) FROM durable_jobs.lease_outcome_tally WHERE queue_name LIKE $1)`, "demo."+run+".%").
		Scan(&jobs, &payloads, &outcomes, &policies, &tallies))
	require.Equal(t, []int{0, 0, 0, 0, 0}, []int{jobs, payloads, outcomes, policies, tallies},
		"jobs, orphan payloads, orphan outcomes, policies and tallies of the run")
}

// queueLine is the narration's line that lists a run's queues.
var queueLine = regexp.MustCompile(`(?m)^Queues demo\.([0-9a-f]+)\.long-job, `)

// RunID returns the run's random name from the narration's line that lists
// its queues.
func RunID(t *testing.T, out string) string {
	t.Helper()
	m := queueLine.FindStringSubmatch(out)
	require.NotNil(t, m, "no queue line in:\n%s", out)
	return m[1]
}

// RunIDOfLine returns the run's random name when line is the one that lists
// its queues, else "".
func RunIDOfLine(line string) string {
	if m := queueLine.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// SelfContainedHTML checks that a page fetches nothing: no URL, no script,
// stylesheet link, image, frame, font or CSS import.
func SelfContainedHTML(t *testing.T, page string) {
	t.Helper()
	lower := strings.ToLower(page)
	for _, banned := range []string{"http://", "https://", "//cdn", "<script", "<link", "<img", "<iframe",
		"<object", "<embed", "@import", "@font-face", "url(", "src=", "href="} {
		require.NotContains(t, lower, banned)
	}
}

// JobCount returns the number of jobs in the queues of every demo run.
func JobCount(t *testing.T, admin *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(),
		`SELECT count(*) FROM durable_jobs.job_record WHERE queue_name LIKE 'demo.%'`).Scan(&n))
	return n
}

// upLine is the narration's line that says the throwaway cluster is up.
var upLine = regexp.MustCompile(`PostgreSQL is up on 127\.0\.0\.1:(\d+) .*\(its files: (\S+), removed at the end\)`)

// UntilFirstClaim reads the narration of a run on a throwaway cluster until
// the first story is under way (the cluster is running, the bundle applied
// and worker-a holds a claim), checks that it told each of those steps, and
// returns the cluster's port and folder and the lines it read. lines is
// left after worker-a's claim; the caller reads the rest.
func UntilFirstClaim(t *testing.T, lines *bufio.Scanner) (port, folder string, seen *strings.Builder) {
	t.Helper()
	seen = &strings.Builder{}
	for lines.Scan() {
		line := lines.Text()
		seen.WriteString(line + "\n")
		if m := upLine.FindStringSubmatch(line); m != nil {
			port, folder = m[1], m[2]
		}
		if strings.Contains(line, "] worker-a claimed job") {
			break
		}
	}
	require.NotEmpty(t, folder, "no startup line in:\n%s", seen.String())
	for _, want := range []string{"Starting a throwaway PostgreSQL", "Applying the migration bundle", "Bundle applied"} {
		require.Contains(t, seen.String(), want, "progress is printed while PostgreSQL starts and the bundle is applied")
	}
	_, err := os.Stat(folder)
	require.NoError(t, err, "the cluster's folder exists while the demo runs")
	return port, folder, seen
}

// ClusterGone fails unless the throwaway cluster's folder is removed and
// nothing listens on its port any more.
func ClusterGone(t *testing.T, port, folder string) {
	t.Helper()
	_, err := os.Stat(folder)
	require.True(t, os.IsNotExist(err), "the cluster's folder %s is removed (stat: %v)", folder, err)
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
	if err == nil {
		conn.Close()
	}
	require.Error(t, err, "nothing listens on the cluster's port any more")
}
