package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/demo/demotest"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// These tests run the demo into each way it can stop early: a role
// or database it cannot play with, and stories whose outcome does not hold
// because the test took a privilege or a setting away from the database
// (per database, so no other test sees it). Each one ends within a few
// seconds, long before the full run of TestDemoStoriesHoldInTheDatabase...

func TestDemoRefusesARoleThatMayNotCreateRoles(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	r := play(t, Options{DatabaseURL: db.LoginURL(t, "durable_job_operator")})
	requireFailed(t, r, "check privileges", "the --database-url role may not create roles")
	require.Contains(t, r.out, "Connected to an existing database")
	require.Zero(t, demotest.JobCount(t, admin))
}

func TestDemoRefusesARoleThatCannotReadTheBundleVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	adminURL, _ := demotest.Admin(t, db, admin, "CREATEROLE")
	r := play(t, Options{DatabaseURL: adminURL})
	requireFailed(t, r, "apply the migration bundle", "permission denied for table leasefence_schema_version (SQLSTATE 42501)")
	require.NotContains(t, r.out, "Applying the migration bundle", "a version it cannot read is not taken for no bundle")
}

func TestDemoMakesNothingWhenItCannotCreateItsSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	// A role that may create roles and read the bundle version, but may not
	// create schemas in the database.
	adminURL, name := demotest.Admin(t, db, admin, "CREATEROLE")
	_, err := admin.Exec(ctx, "GRANT SELECT ON public.leasefence_schema_version TO "+name)
	require.NoError(t, err)
	r := play(t, Options{DatabaseURL: adminURL})
	requireFailed(t, r, "create the demo's login roles and target table", fmt.Sprintf("permission denied for database %s (SQLSTATE 42501)", db.Name))
	require.Contains(t, r.out, "The bundle is already applied")
	demotest.NoLoginsGrantedBy(t, admin, name)
	demotest.NoSchema(t, admin)
}

func TestDemoStopsWhenTheBundleCannotBeApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.NewEmpty(t)
	admin := db.Pool(t)
	// The bundle's first migration creates this schema.
	_, err := admin.Exec(ctx, "CREATE SCHEMA durable_jobs")
	require.NoError(t, err)
	r := play(t, Options{DatabaseURL: db.URL})
	requireFailed(t, r, "apply the migration bundle", `schema "durable_jobs" already exists (SQLSTATE 42P06)`)
	require.Contains(t, r.out, "Applying the migration bundle")
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
	adminURL, name := demotest.Admin(t, db, admin, "SUPERUSER")
	// The demo sets its policies through update_queue_lease_policy (the
	// one policy call of goclient.Admin).
	_, err := admin.Exec(ctx, "REVOKE EXECUTE ON FUNCTION durable_jobs.update_queue_lease_policy FROM durable_job_operator")
	require.NoError(t, err)
	r := play(t, Options{DatabaseURL: adminURL})
	requireFailed(t, r, "set the demo queues' lease policy", "permission denied for function update_queue_lease_policy (SQLSTATE 42501)")
	var policies int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.queue_lease_policy
		WHERE queue_name LIKE 'demo.%'`).Scan(&policies))
	require.Zero(t, policies)
	demotest.NoLoginsGrantedBy(t, admin, name)
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
	r := play(t, Options{DatabaseURL: db.URL, HTMLPath: filepath.Join(t.TempDir(), "t.html"), Keep: true})
	requireFailed(t, r, "story 1", "worker-a's claim did not happen within 10s")
	run := demotest.RunID(t, r.out)
	jobs := demotest.Jobs(t, admin, "demo."+run+".long-job")
	require.Len(t, jobs, 1)
	require.Equal(t, "QUEUED", jobs[0].Status)
	require.Zero(t, jobs[0].Generation)
	demotest.NoRoles(t, admin, run)
}

// storyOneFailure matches the cause of a first story whose job was
// taken over: by worker-b, or by worker-a itself once its lease ran out
// (which of the two polls first after the expiry is up to the schedulers),
// until the job ran out of attempts.
var storyOneFailure = regexp.MustCompile(`^(worker-b was given job (\d+) while worker-a held it|` +
	`job (\d+) ended FAILED, want SUCCEEDED|job (\d+) has fencing generation [2-9] and attempt [2-9], want one claim)$`)

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
	r := play(t, Options{DatabaseURL: db.URL, HTMLPath: htmlPath})
	requireFailed(t, r, "story 1", "permission denied for function enqueue_job (SQLSTATE 42501)")
	require.Contains(t, r.out, "Story 1:")
	require.NotContains(t, r.out, "Story 2:")
	require.Zero(t, demotest.JobCount(t, admin))
	demotest.NoRoles(t, admin, demotest.RunID(t, r.out))
	require.Contains(t, r.out, "The HTML timeline of the run so far could not be written: open "+dir+
		`/missing\u001b[2J\xff/timeline.html: no such file or directory`)
	require.NotContains(t, r.out, "\x1b")
	require.NotContains(t, r.out, "Lease timeline (self-contained HTML")
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
	htmlPath := filepath.Join(t.TempDir(), "timeline.html")
	r := play(t, Options{DatabaseURL: db.URL, HTMLPath: htmlPath, Keep: true})
	requireFailed(t, r, "story 1", "")
	require.Regexp(t, storyOneFailure, errors.Unwrap(r.err).Error())
	run := demotest.RunID(t, r.out)

	// In the database: the job was claimed again after worker-a's lease
	// ran out.
	jobs := demotest.Jobs(t, admin, "demo."+run+".long-job")
	require.Len(t, jobs, 1)
	require.GreaterOrEqual(t, jobs[0].Generation, int64(2))
	require.Contains(t, r.err.Error(), fmt.Sprintf(" job %d ", jobs[0].ID))
	require.Contains(t, r.out, fmt.Sprintf("worker-a could not renew job %d (the database call failed)", jobs[0].ID))
	require.Regexp(t, fmt.Sprintf(`\] worker-[ab] reclaimed job %d until `, jobs[0].ID), r.out)
	demotest.NoRoles(t, admin, run)

	// The timeline of the run so far shows the failed renewals and the reclaim.
	require.Contains(t, r.out, "Lease timeline (self-contained HTML, open it in a browser): "+htmlPath)
	html, err := os.ReadFile(htmlPath)
	require.NoError(t, err)
	demotest.SelfContainedHTML(t, string(html))
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
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{DatabaseURL: db.URL, HTMLPath: filepath.Join(t.TempDir(), "t.html"), Keep: true, Out: pw})
		pw.Close()
	}()

	// As soon as worker-a holds the first story's job (its first renewal
	// is a second away), the operator's setting turns renewal off for that
	// queue.
	var seen strings.Builder
	var queue string
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		line := lines.Text()
		seen.WriteString(line + "\n")
		if run := demotest.RunIDOfLine(line); run != "" {
			queue = "demo." + run + ".long-job"
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
	err := <-done
	var runErr *Error
	require.ErrorAs(t, err, &runErr, seen.String())
	require.Equal(t, "story 1", runErr.Step, seen.String())
	require.Regexp(t, storyOneFailure, runErr.Err.Error())

	jobs := demotest.Jobs(t, admin, queue)
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

func TestRunRefusesAURLThatDoesNotParseWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	// No Out: the narration is discarded.
	err := Run(context.Background(), Options{DatabaseURL: "postgres://admin:s3cret@%zz/db"})
	var runErr *Error
	require.ErrorAs(t, err, &runErr)
	require.Equal(t, "connect to database: the database URL does not parse", err.Error())
	require.NotContains(t, err.Error(), "s3cret")
}

func TestRunStopsWhenTheDatabaseDoesNotAnswer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	r := play(t, Options{DatabaseURL: "postgres://nobody@" + addr + "/nothing?sslmode=disable&connect_timeout=5"})
	requireFailed(t, r, "connect to database", addr)
	require.Contains(t, r.out, "leasefence demo: database-fenced leases in three stories")
}

func TestRunStopsWhenItsLoginsMayNotConnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	adminURL, name := demotest.Admin(t, db, admin, "SUPERUSER")
	_, err := admin.Exec(ctx, "REVOKE CONNECT ON DATABASE "+db.Name+" FROM PUBLIC")
	require.NoError(t, err)
	// The default Connect: pgxpool and a ping, whose refusal is the cause.
	r := play(t, Options{DatabaseURL: adminURL})
	requireFailed(t, r, "create the demo's login roles and target table", "(SQLSTATE 42501)")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, r.err, &pgErr)
	require.Equal(t, "42501", pgErr.Code)
	require.Contains(t, r.out, "Creating login roles for a worker, a producer and an operator")
	demotest.NoSchema(t, admin)
	demotest.NoLoginsGrantedBy(t, admin, name)
}
