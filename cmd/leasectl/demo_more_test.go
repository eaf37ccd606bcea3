package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// These tests run the demo binary into each way it can stop early: a role
// or database it cannot play with, and stories whose outcome does not hold
// because the test took a privilege or a setting away from the database
// (per database, so no other test sees it). Each one ends within a few
// seconds, long before the full run of TestDemoStoriesHoldInTheDatabase...

// lockedBuffer is a bytes.Buffer that a process's output copier may write
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// demoAdmin makes a login role for the demo's --database-url with the given
// role attributes ("SUPERUSER", "CREATEROLE", ...), dropped with db, and
// returns its URL and name.
func demoAdmin(t *testing.T, db *testdb.DB, admin *pgxpool.Pool, attributes string) (string, string) {
	t.Helper()
	loginURL := db.LoginURL(t, "durable_job_auditor")
	cfg, err := pgconn.ParseConfig(loginURL)
	require.NoError(t, err)
	_, err = admin.Exec(context.Background(), "ALTER ROLE "+cfg.User+" "+attributes)
	require.NoError(t, err)
	return loginURL, cfg.User
}

// requireNoLoginsGrantedBy fails unless no role holds a membership granted
// by grantor: the demo's login roles, made by grantor, are gone.
func requireNoLoginsGrantedBy(t *testing.T, admin *pgxpool.Pool, grantor string) {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_auth_members m
		JOIN pg_catalog.pg_roles g ON g.oid = m.grantor WHERE g.rolname = $1`, grantor).Scan(&n))
	require.Zero(t, n, "the demo's login roles are dropped")
}

// requireDemoError requires exit 1 and a first stderr line starting
// "error: demo: <prefix>", and nothing on stderr that names a password or URL.
func requireDemoError(t *testing.T, r result, prefix string) {
	t.Helper()
	requireCode(t, exitError, r)
	require.True(t, strings.HasPrefix(r.stderr, "error: demo: "+prefix), "stderr:\n%s", r.stderr)
	require.NotContains(t, strings.ToLower(r.output()), "postgres://")
	require.NotContains(t, strings.ToLower(r.output()), "password")
}

// demoJobCount returns the number of jobs in the demo's queues of db.
func demoJobCount(t *testing.T, admin *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(),
		`SELECT count(*) FROM durable_jobs.job_record WHERE queue_name LIKE 'demo.%'`).Scan(&n))
	return n
}

func TestDemoRefusesARoleThatMayNotCreateRoles(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	r := leasectl(t, "demo", "--database-url", db.LoginURL(t, "durable_job_operator"))
	requireDemoError(t, r, "check privileges: the --database-url role may not create roles")
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	require.Contains(t, r.stdout, "Connected to an existing database")
	require.Zero(t, demoJobCount(t, admin))
}

func TestDemoRefusesARoleThatCannotReadTheBundleVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	adminURL, _ := demoAdmin(t, db, admin, "CREATEROLE")
	r := leasectl(t, "demo", "--database-url", adminURL)
	requireDemoError(t, r, "apply the migration bundle: permission denied for table leasefence_schema_version (SQLSTATE 42501)")
	require.NotContains(t, r.stdout, "Applying the migration bundle", "a version it cannot read is not taken for no bundle")
}

func TestDemoMakesNothingWhenItCannotCreateItsSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	// A role that may create roles and read the bundle version, but may not
	// create schemas in the database.
	adminURL, name := demoAdmin(t, db, admin, "CREATEROLE")
	_, err := admin.Exec(ctx, "GRANT SELECT ON public.leasefence_schema_version TO "+name)
	require.NoError(t, err)
	r := leasectl(t, "demo", "--database-url", adminURL)
	requireDemoError(t, r, fmt.Sprintf("create the demo's login roles and target table: permission denied for database %s (SQLSTATE 42501)", db.Name))
	require.Contains(t, r.stdout, "The bundle is already applied")
	requireNoLoginsGrantedBy(t, admin, name)
	requireNoDemoSchema(t, admin)
}

// requireNoDemoSchema fails unless no schema of a demo run is left.
func requireNoDemoSchema(t *testing.T, admin *pgxpool.Pool) {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname LIKE 'leasefence\_demo\_%'`).Scan(&n))
	require.Zero(t, n, "the demo drops its schema")
}

func TestDemoStopsWhenItsLoginsMayNotConnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	adminURL, name := demoAdmin(t, db, admin, "SUPERUSER")
	_, err := admin.Exec(ctx, "REVOKE CONNECT ON DATABASE "+db.Name+" FROM PUBLIC")
	require.NoError(t, err)

	// The keyword/value form of the URL: the demo's logins replace its user
	// and password.
	u, err := url.Parse(adminURL)
	require.NoError(t, err)
	password, _ := u.User.Password()
	conn := fmt.Sprintf("host=%s port=%s dbname=%s user=%s password=%s", u.Hostname(), u.Port(),
		strings.TrimPrefix(u.Path, "/"), u.User.Username(), password)
	for key, values := range u.Query() {
		conn += " " + key + "=" + values[0]
	}
	r := leasectl(t, "demo", "--database-url", conn)
	requireDemoError(t, r, "create the demo's login roles and target table: the server refused the connection "+
		"(SQLSTATE 42501: the login may not connect to the database)")
	require.NotContains(t, r.output(), db.Name)
	require.NotContains(t, r.output(), password)

	// It made its schema, target table and login roles, then dropped
	// them all.
	require.Contains(t, r.stdout, "Creating login roles for a worker, a producer and an operator")
	requireNoDemoSchema(t, admin)
	requireNoLoginsGrantedBy(t, admin, name)
}

func TestDemoStopsWhenTheBundleCannotBeApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.NewEmpty(t)
	admin := db.Pool(t)
	// The bundle's first migration creates this schema.
	_, err := admin.Exec(ctx, "CREATE SCHEMA durable_jobs")
	require.NoError(t, err)
	r := leasectl(t, "demo", "--database-url", db.URL)
	requireDemoError(t, r, `apply the migration bundle: `)
	require.Contains(t, r.stderr, `schema "durable_jobs" already exists (SQLSTATE 42P06)`)
	require.Contains(t, r.stdout, "Applying the migration bundle")
	var version int32
	require.NoError(t, admin.QueryRow(ctx, `SELECT version FROM public.leasefence_schema_version`).Scan(&version))
	require.Zero(t, version, "the failed migration left nothing applied")
	var tables int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'durable_jobs'`).Scan(&tables))
	require.Zero(t, tables)
}

func TestDemoStopsWhenTheOperatorCannotSetItsPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	adminURL, name := demoAdmin(t, db, admin, "SUPERUSER")
	_, err := admin.Exec(ctx, "REVOKE EXECUTE ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) FROM durable_job_operator")
	require.NoError(t, err)
	r := leasectl(t, "demo", "--database-url", adminURL)
	requireDemoError(t, r, "set the demo queues' lease policy: permission denied for function set_queue_lease_policy (SQLSTATE 42501)")
	var policies int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.queue_lease_policy
		WHERE queue_name LIKE 'demo.%'`).Scan(&policies))
	require.Zero(t, policies)
	requireNoLoginsGrantedBy(t, admin, name)
}

func TestDemoStopsWhenItsWorkerCannotClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	// worker-a's loop stops at its first claim, refused for want of a
	// privilege (retrying cannot fix that); the job it waits for stays
	// queued.
	_, err := admin.Exec(ctx, "REVOKE EXECUTE ON FUNCTION durable_jobs.claim_next_job, durable_jobs.claim_next_jobs FROM durable_job_worker")
	require.NoError(t, err)
	r := leasectl(t, "demo", "--database-url", db.URL, "--html", filepath.Join(t.TempDir(), "t.html"), "--keep")
	requireDemoError(t, r, "story 1: worker-a's claim did not happen within 10s")
	run := demoRunID(t, r.stdout)
	jobs := demoJobs(t, admin, "demo."+run+".long-job")
	require.Len(t, jobs, 1)
	require.Equal(t, "QUEUED", jobs[0].Status)
	require.Zero(t, jobs[0].Generation)
	requireNoDemoRoles(t, admin, run)
}

// demoRunID returns the run's random name from the line that lists its
// queues.
func demoRunID(t *testing.T, stdout string) string {
	t.Helper()
	m := regexp.MustCompile(`Queues demo\.([0-9a-f]+)\.long-job, `).FindStringSubmatch(stdout)
	require.NotNil(t, m, "no queue line in:\n%s", stdout)
	return m[1]
}

// storyOneFailure matches the error line of a first story whose job was
// taken over: by worker-b, or by worker-a itself once its lease ran out
// (which of the two polls first after the expiry is up to the schedulers),
// until the job ran out of attempts.
var storyOneFailure = regexp.MustCompile(`^error: demo: story 1: (worker-b was given job (\d+) while worker-a held it|` +
	`job (\d+) ended FAILED, want SUCCEEDED|job (\d+) has fencing generation [2-9] and attempt [2-9], want one claim)\n$`)

// requireNoDemoRoles fails unless the run's login roles are gone.
func requireNoDemoRoles(t *testing.T, admin *pgxpool.Pool, run string) {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname LIKE $1`,
		"leasefence_demo_"+run+"_%").Scan(&n))
	require.Zero(t, n, "the demo drops the login roles it made")
}

func TestDemoStopsAtTheFirstStoryWhenTheProducerCannotEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, "REVOKE EXECUTE ON FUNCTION durable_jobs.enqueue_job FROM durable_job_producer")
	require.NoError(t, err)
	// The timeline of the story so far is asked for in a folder that does
	// not exist: the demo says it could not write it.
	// Its name holds an escape sequence and a byte that is not UTF-8: the
	// error line shows both as escapes.
	dir := t.TempDir()
	htmlPath := filepath.Join(dir, "missing\x1b[2J\xff", "timeline.html")
	r := leasectl(t, "demo", "--database-url", db.URL, "--html", htmlPath)
	requireDemoError(t, r, "story 1: ")
	require.Contains(t, r.stderr, "permission denied for function enqueue_job (SQLSTATE 42501)")
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	require.Contains(t, r.stdout, "Story 1:")
	require.NotContains(t, r.stdout, "Story 2:")
	require.Zero(t, demoJobCount(t, admin))
	requireNoDemoRoles(t, admin, demoRunID(t, r.stdout))
	require.Contains(t, r.stdout, "The HTML timeline of the run so far could not be written: open "+dir+
		`/missing\u001b[2J\xff/timeline.html: no such file or directory`)
	require.NotContains(t, r.stdout, "\x1b")
	require.NotContains(t, r.stdout, "Lease timeline (self-contained HTML")
}

func TestDemoNoticesWhenItsWorkerCannotRenew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	// worker-a's claim is made, but no renewal of it can reach the lease:
	// the story's one owner is lost, and the demo must say so.
	_, err := admin.Exec(ctx, "REVOKE EXECUTE ON FUNCTION durable_jobs.renew_job_lease, durable_jobs.renew_job_leases FROM durable_job_worker")
	require.NoError(t, err)
	tmp := t.TempDir()
	r := leasectlEnv(t, []string{"TMPDIR=" + tmp}, "demo", "--database-url", db.URL, "--keep")
	requireCode(t, exitError, r)
	require.Regexp(t, storyOneFailure, r.stderr)
	run := demoRunID(t, r.stdout)

	// In the database: the job was claimed again after worker-a's lease
	// ran out.
	jobs := demoJobs(t, admin, "demo."+run+".long-job")
	require.Len(t, jobs, 1)
	require.GreaterOrEqual(t, jobs[0].Generation, int64(2))
	require.Contains(t, r.stderr, fmt.Sprintf(" job %d ", jobs[0].ID))
	require.Contains(t, r.stdout, fmt.Sprintf("worker-a could not renew job %d (the database call failed)", jobs[0].ID))
	require.Regexp(t, fmt.Sprintf(`\] worker-[ab] reclaimed job %d until `, jobs[0].ID), r.stdout)
	requireNoDemoRoles(t, admin, run)

	// The timeline of the run so far, in the default place (the OS temp
	// folder), shows the failed renewals and the reclaim.
	htmlPath := filepath.Join(tmp, "leasefence-demo-"+run+".html")
	require.Contains(t, r.stdout, "Lease timeline (self-contained HTML, open it in a browser): "+htmlPath)
	html, err := os.ReadFile(htmlPath)
	require.NoError(t, err)
	requireSelfContainedHTML(t, string(html))
	require.Equal(t, 1, strings.Count(string(html), "<svg"), "one chart: story 1's job")
	require.Contains(t, string(html), "could not renew job")
	require.Contains(t, string(html), ">reclaimed<")
	require.NotContains(t, string(html), "Story 2")
}

func TestDemoNoticesWhenRenewalIsDisabledMidStory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testdb.New(t)
	admin := db.Pool(t)
	cmd := exec.CommandContext(ctx, leasectlBin, "demo", "--database-url", db.URL, "--html", filepath.Join(t.TempDir(), "t.html"), "--keep")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	// As soon as worker-a holds the first story's job (its first renewal
	// is a second away), the operator's setting turns renewal off for that
	// queue.
	var seen strings.Builder
	var queue string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		seen.WriteString(line + "\n")
		if m := regexp.MustCompile(`^Queues (demo\.[0-9a-f]+\.long-job), `).FindStringSubmatch(line); m != nil {
			queue = m[1]
		}
		if queue != "" && strings.Contains(line, "] worker-a claimed job") {
			_, err := admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, '3 s', '1 s', '1 min', false, 'test: renewal off mid-story')`, queue)
			require.NoError(t, err)
			break
		}
	}
	for lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
	}
	waitErr := cmd.Wait()
	var exitErr *exec.ExitError
	require.True(t, errors.As(waitErr, &exitErr), "the demo exits non-zero: %v\n%s", waitErr, seen.String())
	require.Equal(t, exitError, exitErr.ExitCode(), seen.String())
	require.Regexp(t, storyOneFailure, stderr.String())

	jobs := demoJobs(t, admin, queue)
	require.Len(t, jobs, 1)
	require.Contains(t, seen.String(), fmt.Sprintf("worker-a tried to renew job %d: the database answered renewal_disabled", jobs[0].ID))
	require.GreaterOrEqual(t, jobs[0].Generation, int64(2), "the job was claimed again once worker-a's lease ran out")
	require.Zero(t, jobs[0].Renewals, "no renewal was granted")
}

func TestDemoRecorderKeepsRecordingOrderAmongEqualTimes(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var out strings.Builder
	rec := newDemoRecorder(&out)
	// Three events at one database time, then an earlier one recorded
	// last (a slower goroutine's).
	for _, text := range []string{"first", "second", "third"} {
		rec.emit(demoEvent{At: t0.Add(time.Second), Story: 1, Job: 1, Actor: "worker-a", Kind: evRenewed, Text: text})
	}
	rec.emit(demoEvent{At: t0, Story: 1, Job: 1, Actor: "producer", Kind: evEnqueued, Text: "earlier"})
	rec.close()
	require.Equal(t, "  [db 12:00:00.000] producer earlier\n"+
		"  [db 12:00:01.000] worker-a first\n  [db 12:00:01.000] worker-a second\n  [db 12:00:01.000] worker-a third\n", out.String())
	events, _, _ := rec.snapshot()
	var texts []string
	for _, ev := range events {
		texts = append(texts, ev.Text)
	}
	require.Equal(t, []string{"earlier", "first", "second", "third"}, texts)
}

func TestDemoTimelineGridStaysReadableOnLongCharts(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	labels := func(span time.Duration) []string {
		chart := buildChart(1, []demoEvent{
			{At: t0, Story: 1, Job: 1, Actor: "producer", Kind: evEnqueued},
			{At: t0.Add(span), Story: 1, Job: 1, Actor: "database", Kind: evChecked},
		}, "", "")
		var out []string
		for _, tick := range chart.Grid {
			out = append(out, tick.Label)
		}
		return out
	}
	// 2.7 s of chart (with its padding): a line every second.
	require.Equal(t, []string{"12:00:00.000", "+1s", "+2s"}, labels(2*time.Second))
	// 15.7 s: still every second, 16 lines.
	require.Len(t, labels(15*time.Second), 16)
	require.Contains(t, labels(15*time.Second), "+15s")
	// 40.7 s: every 4 s (2 s would make 20 lines).
	long := labels(40 * time.Second)
	require.Equal(t, []string{"12:00:00.000", "+4s", "+8s", "+12s", "+16s", "+20s", "+24s", "+28s", "+32s", "+36s", "+40s"}, long)
}

func TestDemoTimelineOrdersChartsByStoryThenFirstEvent(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	events := []demoEvent{ // in database-time order, as snapshot returns them
		{At: at(0), Story: 2, Job: 5, Actor: "producer", Kind: evEnqueued, Text: "enqueued job 5"},
		{At: at(1), Story: 1, Job: 30, Actor: "producer", Kind: evEnqueued, Text: "enqueued job 30"},
		{At: at(2), Story: 1, Job: 20, Actor: "producer", Kind: evEnqueued, Text: "enqueued job 20"},
		{At: at(3), Story: 1, Job: 30, Actor: "worker-a", Kind: evClaimed, Text: "claimed job 30"},
	}
	html, err := renderTimeline(timelinePage{Title: "t"}, events, map[int]string{}, map[int64]string{})
	require.NoError(t, err)
	page := string(html)
	i30, i20, i5 := strings.Index(page, "Story 1 · job 30"), strings.Index(page, "Story 1 · job 20"), strings.Index(page, "Story 2 · job 5")
	require.True(t, i30 >= 0 && i20 >= 0 && i5 >= 0, page)
	require.Less(t, i30, i20, "within a story, the job whose first event came first")
	require.Less(t, i20, i5, "story 1 before story 2, though story 2's job came first")
}
