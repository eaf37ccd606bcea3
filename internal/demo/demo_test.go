package demo

import (
	"bufio"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/demo/demotest"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// outcome is what one run of the demo did.
type outcome struct {
	err error
	out string // the narration
}

// play runs the demo with opts, its narration written to a buffer.
func play(t *testing.T, opts Options) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out demotest.LockedBuffer
	opts.Out = &out
	err := Run(ctx, opts)
	return outcome{err: err, out: out.String()}
}

// requireFailed requires a run that failed at step with a cause whose text
// contains cause, and a narration that names no password or URL.
func requireFailed(t *testing.T, r outcome, step, cause string) {
	t.Helper()
	var runErr *Error
	require.ErrorAs(t, r.err, &runErr, r.out)
	require.Equal(t, step, runErr.Step, "%v\n%s", r.err, r.out)
	require.Contains(t, runErr.Err.Error(), cause)
	require.NotContains(t, strings.ToLower(r.out), "postgres://")
	require.NotContains(t, strings.ToLower(r.out), "password")
}

// demoLedger returns the outcome ledger of job as "STATUS/generation".
func demoLedger(t *testing.T, pool *pgxpool.Pool, job int64) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT outcome_status::text || '/' || lease_fencing_generation
		FROM durable_jobs.job_outcome_ledger WHERE job_record_id = $1 ORDER BY job_outcome_record_id`, job)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// demoTargetRows returns the target rows of job in the schema of demo run
// (kept with --keep) as "writer/generation".
func demoTargetRows(t *testing.T, pool *pgxpool.Pool, run string, job int64) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT written_by || '/' || lease_fencing_generation
		FROM leasefence_demo_`+run+`.target WHERE job_record_id = $1 ORDER BY lease_fencing_generation`, job)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// demoTally returns the committed tally of outcome for queue.
func demoTally(t *testing.T, pool *pgxpool.Pool, queue, outcome string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT COALESCE(sum(outcome_count), 0)::bigint
		FROM durable_jobs.lease_outcome_tally WHERE queue_name = $1 AND outcome_kind = $2`, queue, outcome).Scan(&n))
	return n
}

func TestDemoStoriesHoldInTheDatabaseAndLeaveOtherDataAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)

	// Data the demo must leave alone: a job of another queue, and the
	// default policy.
	producer := db.LoginPool(t, "durable_job_producer")
	var otherJob int64
	require.NoError(t, producer.QueryRow(ctx,
		`SELECT durable_jobs.enqueue_job('billing.invoices', '{"invoice": 7}'::jsonb)`).Scan(&otherJob))
	var defaultPolicyBefore string
	require.NoError(t, admin.QueryRow(ctx, `SELECT row_to_json(p)::text FROM durable_jobs.queue_lease_policy p
		WHERE queue_name = '*'`).Scan(&defaultPolicyBefore))

	htmlPath := filepath.Join(t.TempDir(), "timeline.html")
	began := time.Now()
	var healthRows int
	r := play(t, Options{DatabaseURL: db.URL, HTMLPath: htmlPath, Keep: true,
		Health: func(ctx context.Context, connString string) error {
			// The operator login it is given reads lease health.
			pool, err := pgxpool.New(ctx, connString)
			if err != nil {
				return err
			}
			defer pool.Close()
			return pool.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.lease_health_by_queue()`).Scan(&healthRows)
		}})
	require.NoError(t, r.err, r.out)
	require.Less(t, time.Since(began), time.Minute, "the demo must finish in under a minute")

	// The run's queues, found in the database.
	rows, err := admin.Query(ctx, `SELECT DISTINCT split_part(queue_name, '.', 2) FROM durable_jobs.job_record
		WHERE queue_name LIKE 'demo.%'`)
	require.NoError(t, err)
	runs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, runs, 1, "one demo run, one set of queues")
	run := runs[0]
	q1, q2, q3 := "demo."+run+".long-job", "demo."+run+".frozen-worker", "demo."+run+".cancel"

	// Story 1: one owner through renewals, completed once.
	jobs1 := demotest.Jobs(t, admin, q1)
	require.Len(t, jobs1, 1)
	j1 := jobs1[0]
	require.Equal(t, "SUCCEEDED", j1.Status)
	require.EqualValues(t, 1, j1.Generation, "one claim: never reclaimed")
	require.EqualValues(t, 1, j1.Attempt)
	require.GreaterOrEqual(t, j1.Renewals, int64(3))
	require.NotNil(t, j1.ClaimedAt)
	require.GreaterOrEqual(t, j1.ChangedAt.Sub(*j1.ClaimedAt), 4*demoLeaseDuration,
		"the job ran four times its original lease")
	require.Equal(t, []string{"SUCCEEDED/1"}, demoLedger(t, admin, j1.ID))
	require.Equal(t, []string{"worker-a/1"}, demoTargetRows(t, admin, run, j1.ID))

	// Story 2: reclaimed only after expiry, completed by the second worker;
	// the frozen worker's target row is absent.
	jobs2 := demotest.Jobs(t, admin, q2)
	require.Len(t, jobs2, 1)
	j2 := jobs2[0]
	require.Equal(t, "SUCCEEDED", j2.Status)
	require.EqualValues(t, 2, j2.Generation)
	require.EqualValues(t, 2, j2.Attempt)
	require.NotNil(t, j2.ClaimedAt)
	require.GreaterOrEqual(t, j2.ClaimedAt.Sub(j2.CreatedAt), demoLeaseDuration,
		"the second claim came no sooner than one lease after the job was made")
	require.Equal(t, []string{"SUCCEEDED/2"}, demoLedger(t, admin, j2.ID), "completed once, by generation 2")
	require.Equal(t, []string{"worker-b/2"}, demoTargetRows(t, admin, run, j2.ID), "the frozen worker's write was rolled back")
	require.GreaterOrEqual(t, demoTally(t, admin, q2, "reclaim"), int64(1))

	// Story 3: cancelled while running; the worker wrote nothing.
	jobs3 := demotest.Jobs(t, admin, q3)
	require.Len(t, jobs3, 1)
	j3 := jobs3[0]
	require.Equal(t, "CANCELLED", j3.Status)
	require.EqualValues(t, 1, j3.Generation)
	require.Empty(t, demoLedger(t, admin, j3.ID))
	require.Empty(t, demoTargetRows(t, admin, run, j3.ID))
	require.GreaterOrEqual(t, demoTally(t, admin, q3, "stale_renewal"), int64(1), "the heartbeat saw the cancel as stale")

	// The demo's own policies, and nothing else changed.
	var demoPolicies int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.queue_lease_policy
		WHERE queue_name = ANY($1) AND lease_duration = '3 s' AND renewal_interval = '1 s'`,
		[]string{q1, q2, q3}).Scan(&demoPolicies))
	require.Equal(t, 3, demoPolicies)
	var defaultPolicyAfter, otherStatus string
	require.NoError(t, admin.QueryRow(ctx, `SELECT row_to_json(p)::text FROM durable_jobs.queue_lease_policy p
		WHERE queue_name = '*'`).Scan(&defaultPolicyAfter))
	require.Equal(t, defaultPolicyBefore, defaultPolicyAfter)
	require.NoError(t, admin.QueryRow(ctx, `SELECT job_status::text FROM durable_jobs.job_record WHERE job_record_id = $1`,
		otherJob).Scan(&otherStatus))
	require.Equal(t, "QUEUED", otherStatus)
	var leftRoles int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname LIKE $1`,
		"leasefence_demo_"+run+"_%").Scan(&leftRoles))
	require.Zero(t, leftRoles, "the demo drops the login roles it made")
	// --keep kept its schema, which only its admin may create objects in,
	// and nothing of the demo is in public.
	var schemaOwner string
	var othersMayCreate bool
	require.NoError(t, admin.QueryRow(ctx, `SELECT nspowner::regrole::text, EXISTS (SELECT 1 FROM aclexplode(nspacl) a
		WHERE a.grantee <> nspowner AND a.privilege_type = 'CREATE') FROM pg_namespace WHERE nspname = $1`,
		"leasefence_demo_"+run).Scan(&schemaOwner, &othersMayCreate))
	adminCfg, err := pgconn.ParseConfig(db.URL)
	require.NoError(t, err)
	require.Equal(t, adminCfg.User, schemaOwner, "the schema is the demo admin's")
	require.False(t, othersMayCreate)
	var inPublic int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace
		AND relname LIKE 'leasefence_demo%'`).Scan(&inPublic))
	require.Zero(t, inPublic)
	require.Contains(t, r.out, "kept (--keep) its schema leasefence_demo_"+run)
	require.GreaterOrEqual(t, healthRows, 3, "Health was called with a login that reads the demo queues' health")

	// What it printed: the stories, the evidence and the timeline's path.
	for _, want := range []string{"Story 1:", "Story 2:", "Story 3:", "LF001", "Lease health (leasectl health",
		"Evidence of this run", "leasectl audit: passed", htmlPath} {
		require.Contains(t, r.out, want)
	}

	html, err := os.ReadFile(htmlPath)
	require.NoError(t, err)
	demotest.SelfContainedHTML(t, string(html))
	for _, want := range []string{"<svg", "Story 1", "Story 2", "Story 3", "reclaimed", "LF001", "cancelled"} {
		require.Contains(t, string(html), want)
	}

	// No owner id, payload value, password or URL in the output or the page.
	var secrets []string
	for _, j := range append(append(jobs1, jobs2...), jobs3...) {
		require.NotNil(t, j.Owner)
		secrets = append(secrets, *j.Owner)
	}
	rows, err = admin.Query(ctx, `SELECT e.value FROM durable_jobs.job_payload_record p
		JOIN durable_jobs.job_record j USING (job_record_id), jsonb_each_text(p.job_payload) AS e
		WHERE j.queue_name = ANY($1) AND length(e.value) >= 6`, []string{q1, q2, q3})
	require.NoError(t, err)
	payloadValues, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, payloadValues)
	secrets = append(secrets, payloadValues...)
	for _, s := range secrets {
		require.NotContains(t, r.out, s)
		require.NotContains(t, string(html), s)
	}
	for _, s := range []string{"postgres://", "password", "@example.invalid"} {
		require.NotContains(t, strings.ToLower(r.out), s)
		require.NotContains(t, strings.ToLower(string(html)), s)
	}

	// The page renders in a real browser and is not blank.
	requireRendersInChromium(t, htmlPath)
}

// requireRendersInChromium screenshots the page with headless Chromium and
// checks that the picture has content: a good share of pixels that are not
// the background, and several distinct colours.
func requireRendersInChromium(t *testing.T, htmlPath string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run make deps (apt-get install chromium)")
	}
	dir := t.TempDir()
	shot := filepath.Join(dir, "timeline.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1200,900",
		"file://"+htmlPath)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "chromium: %s", out)
	f, err := os.Open(shot)
	require.NoError(t, err, "chromium wrote no screenshot: %s", out)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	share, colours := pictureContent(img)
	require.Greater(t, share, 0.03, "the screenshot is nearly blank (%.1f%% non-background pixels)", share*100)
	require.GreaterOrEqual(t, colours, 8, "the screenshot has only %d distinct colours", colours)
}

// pictureContent returns the share of pixels that differ clearly from the
// most common colour (the background), and the number of distinct colours
// (4 bits per channel) that each cover at least 0.05% of the picture.
func pictureContent(img image.Image) (share float64, colours int) {
	b := img.Bounds()
	counts := map[[3]uint8]int{}
	total := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			counts[[3]uint8{uint8(r >> 12), uint8(g >> 12), uint8(bl >> 12)}]++
			total++
		}
	}
	var background [3]uint8
	for c, n := range counts {
		if n > counts[background] {
			background = c
		}
	}
	other := 0
	for c, n := range counts {
		d := 0
		for i := range c {
			d += abs(int(c[i]) - int(background[i]))
		}
		if d > 1 {
			other += n
		}
		if n*2000 >= total {
			colours++
		}
	}
	return float64(other) / float64(total), colours
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestRunInterruptedStopsAndRemovesItsCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The narration is read line by line while the demo runs; once worker-a
	// holds the first story's job, the context is cancelled.
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{HTMLPath: filepath.Join(t.TempDir(), "timeline.html"), Out: pw})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	port, folder, _ := demotest.UntilFirstClaim(t, lines)

	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }() // the rest of the narration
	err := <-done
	var runErr *Error
	require.ErrorAs(t, err, &runErr)
	require.ErrorIs(t, err, ErrInterrupted)
	require.Equal(t, "story 1", runErr.Step)
	require.Equal(t, "story 1: interrupted", err.Error())

	demotest.ClusterGone(t, port, folder)
}

func TestDemoRefusesADatabaseAtAnotherBundleVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	_, err := admin.Exec(context.Background(), `UPDATE `+"public.leasefence_schema_version"+` SET version = 1`)
	require.NoError(t, err)
	r := play(t, Options{DatabaseURL: db.URL})
	requireFailed(t, r, "apply the migration bundle", "the database is at bundle version 1")
	var jobs int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM durable_jobs.job_record`).Scan(&jobs))
	require.Zero(t, jobs, "nothing was played")
}

func TestDemoTimelineEscapesTextAndDrawsEveryJob(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	events := []demoEvent{
		{At: at(0), Story: 2, Job: 7, Actor: "producer", Kind: evEnqueued, Text: "enqueued job 7"},
		{At: at(100), Story: 2, Job: 7, Actor: "worker-a", Kind: evClaimed, Until: at(3100), Text: "claimed job 7"},
		{At: at(1100), Story: 2, Job: 7, Actor: "worker-a", Kind: evRenewed, Until: at(4100), Text: "renewed job 7"},
		{At: at(1500), Story: 2, Job: 7, Actor: "worker-a", Kind: evFrozen, Text: "freezes <script>alert(1)</script>"},
		{At: at(4100), Story: 2, Job: 7, Actor: "database", Kind: evExpired, Text: "lease expired"},
		{At: at(4150), Story: 2, Job: 7, Actor: "worker-b", Kind: evReclaimed, Until: at(7150), Text: "reclaimed job 7"},
		{At: at(4700), Story: 2, Job: 7, Actor: "worker-b", Kind: evCompleted, Text: "completed job 7"},
		{At: at(4800), Story: 2, Job: 7, Actor: "worker-a", Kind: evRefused, Text: "refused with LF001"},
		{At: at(5000), Story: 3, Job: 8, Actor: "worker-c", Kind: evClaimed, Until: at(8000), Text: "claimed job 8"},
		{At: at(6000), Story: 3, Job: 8, Actor: "operator", Kind: evCancelled, Text: "cancels job 8"},
		{At: at(6300), Story: 3, Job: 8, Actor: "worker-c", Kind: evHandlerStopped, Text: "stops its handler"},
	}
	html, err := renderTimeline(timelinePage{Title: "t & <b>", Where: "w", Policy: "p"}, events,
		map[int]string{2: "frozen", 3: "cancel"}, map[int64]string{7: "SUCCEEDED by worker-b"})
	require.NoError(t, err)
	page := string(html)
	demotest.SelfContainedHTML(t, page)
	require.NotContains(t, page, "<script>alert")
	require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, page, "t &amp; &lt;b&gt;")
	require.Equal(t, 2, strings.Count(page, "<svg"), "one chart per job")
	require.Less(t, strings.Index(page, "Story 2 · job 7"), strings.Index(page, "Story 3 · job 8"))
	require.Contains(t, page, `fill-opacity="0.4"`, "the frozen worker's unrenewed span is pale")
	require.Contains(t, page, "SUCCEEDED by worker-b")
	require.NotContains(t, page, "ZgotmplZ", "no value was refused by the template's escaper")
	for _, label := range []string{"lease expired", "reclaimed", "LF001 refused, rolled back", "cancelled", "handler stopped"} {
		require.Contains(t, page, ">"+label+"<", label)
	}
	require.Equal(t, fmt.Sprint(len(events)), fmt.Sprint(strings.Count(page, `<td class="time">`)), "every event is in the tables")
}

func TestDemoLoginConnStringReplacesUserAndPassword(t *testing.T) {
	t.Parallel()
	for _, base := range []string{
		"postgres://admin:secret@db.internal:6432/jobs?sslmode=disable",
		"host=db.internal port=6432 dbname=jobs user=admin password=secret sslmode=disable",
	} {
		conn := loginConnString(base, "leasefence_demo_ab12cd_worker", "0123abcd")
		cfg, err := pgconn.ParseConfig(conn)
		require.NoError(t, err, base)
		require.Equal(t, "leasefence_demo_ab12cd_worker", cfg.User, base)
		require.Equal(t, "0123abcd", cfg.Password, base)
		require.Equal(t, "db.internal", cfg.Host, base)
		require.EqualValues(t, 6432, cfg.Port, base)
		require.Equal(t, "jobs", cfg.Database, base)
	}
	require.Equal(t, "user='leasefence_demo_ab12cd_worker' password='0123abcd'", loginConnString("", "leasefence_demo_ab12cd_worker", "0123abcd"),
		"with no URL the PG* variables give the rest")
}
