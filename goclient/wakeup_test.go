package goclient_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// wakeupPoll is the poll interval of the wake-up tests: a job they see
// started within wakeupBound of the worker's start cannot have been found
// by a poll (the worker's first claim, at its start, found nothing; the
// next poll comes wakeupPoll later).
const (
	wakeupPoll  = 30 * time.Second
	wakeupBound = 20 * time.Second
)

// debugLogger is a text logger at DEBUG writing to a buffer the test reads.
func debugLogger() (*slog.Logger, *goclient.LogBuffer) {
	logs := &goclient.LogBuffer{}
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}

// startedWorker runs a worker of c on testQueue whose handler reports each
// job it starts on the returned channel and then calls handle (nil: the job
// succeeds).
func startedWorker(t *testing.T, c *goclient.Client, poll time.Duration,
	handle func(goclient.Job) error) (chan int64, func() error) {
	t.Helper()
	started := make(chan int64, 16)
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, PollInterval: poll,
		Handler: func(ctx context.Context, job goclient.Job) error {
			started <- job.ID()
			if handle != nil {
				return handle(job)
			}
			return nil
		}})
	require.NoError(t, err)
	return started, runWorker(t, w)
}

// awaitStart waits for the job id on started until deadline.
func awaitStart(t *testing.T, started chan int64, id int64, deadline time.Time, what string) {
	t.Helper()
	for {
		select {
		case got := <-started:
			if got == id {
				return
			}
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s: job %d did not start before the worker's next poll could have found it", what, id)
		}
	}
}

// listenerPIDs is the backends of the test's database whose last statement
// was a LISTEN: the wake-up listeners.
func (e *env) listenerPIDs() []int32 {
	e.t.Helper()
	var pids []int32
	require.NoError(e.t, e.admin.QueryRow(context.Background(), `SELECT COALESCE(array_agg(pid), '{}') FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&pids))
	return pids
}

// Issue 37: a job enqueued on an idle queue starts at once, well before the
// worker's next poll (30 s): the enqueue's NOTIFY wakes the worker's
// listener. The worker says it listens (DEBUG) and nothing more.
func TestIdleWorkerStartsANewJobBeforeItsNextPoll(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	logger, logs := debugLogger()
	start := time.Now()
	started, stop := startedWorker(t, e.worker(goclient.Config{Logger: logger}), wakeupPoll, nil)
	waitFor(t, 10*time.Second, "the worker to listen", func() bool {
		return strings.Contains(logs.String(), "leasefence: listening for new jobs")
	})
	id := e.enqueue(1)[0]
	awaitStart(t, started, id, start.Add(wakeupBound), "a job on an idle queue")
	require.NoError(t, stop())
	require.NotContains(t, logs.String(), "wake-up listener lost")
}

// A worker that knows when the next job falls due sleeps until then, not a
// whole poll: a job enqueued before the worker starts with a run-after 1 s
// ahead starts, and so does its retry 1 s after its first attempt, both
// long before the 30 s poll.
func TestWorkerWakesWhenTheNextJobFallsDue(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	id, err := e.producer.Enqueue(context.Background(), goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{}`),
		RunAfter: e.dbNow().Add(time.Second)})
	require.NoError(t, err)
	start := time.Now()
	started, stop := startedWorker(t, e.worker(), wakeupPoll, func(job goclient.Job) error {
		if job.Attempt() == 1 {
			return goclient.RetryAfter(time.Second, "not_yet", nil)
		}
		return nil
	})
	awaitStart(t, started, id, start.Add(wakeupBound), "a job due 1 s after the worker started")
	awaitStart(t, started, id, start.Add(wakeupBound), "its retry, due 1 s after the first attempt")
	waitFor(t, 10*time.Second, "the retry to succeed", func() bool { return e.state(id).Status == goclient.StatusSucceeded })
	require.NoError(t, stop())
}

// Notifications are lost while the listener's connection is down: when it
// is cut (pg_terminate_backend), the worker says so once, connects again,
// says it is back, and a job enqueued then still starts long before the
// next poll.
func TestWakeupListenerCutConnectsAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	logger, logs := debugLogger()
	start := time.Now()
	started, stop := startedWorker(t, e.worker(goclient.Config{Logger: logger}), wakeupPoll, nil)
	waitFor(t, 10*time.Second, "the worker to listen", func() bool {
		return strings.Contains(logs.String(), "leasefence: listening for new jobs")
	})
	pids := e.listenerPIDs()
	require.Len(t, pids, 1, "one listener")
	_, err := e.admin.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pids[0])
	require.NoError(t, err)
	waitFor(t, 10*time.Second, "the listener to be back", func() bool {
		return strings.Contains(logs.String(), "leasefence: wake-up listener back")
	})
	require.NotEqual(t, pids, e.listenerPIDs(), "a new listener session")
	id := e.enqueue(1)[0]
	awaitStart(t, started, id, start.Add(wakeupBound), "a job after the listener came back")
	require.NoError(t, stop())
	require.Equal(t, 1, strings.Count(logs.String(), "wake-up listener lost"), logs.String())
}

// pgBouncer starts a real PgBouncer (Debian's pgbouncer) in poolMode in
// front of the server of rawURL, for the login of rawURL, and returns the
// URL through it (default_query_exec_mode=exec: PgBouncer 1.18 in
// transaction mode keeps no prepared statement). It stops at cleanup.
func pgBouncer(t *testing.T, rawURL, poolMode string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("pgbouncer is missing: install Debian's pgbouncer (make deps, or apt-get install pgbouncer): %v", err)
	}
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	pgHost, pgPort, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	dir, err := os.MkdirTemp("", "pgbouncer")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755)) // PgBouncer may run as another account (below)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
ignore_startup_parameters = extra_float_digits,statement_timeout
`, pgHost, pgPort, port, filepath.Join(dir, "users.txt"), poolMode)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.txt"), []byte(fmt.Sprintf("%q \"\"\n", u.User.Username())), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644))
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		_, err := user.Lookup("nobody")
		require.NoError(t, err, "running as root, PgBouncer needs the account nobody to run as")
		args = append([]string{"-u", "nobody"}, args...)
	}
	out := &goclient.LogBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitFor(t, 10*time.Second, "PgBouncer to accept connections", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	u.Host = fmt.Sprintf("127.0.0.1:%d", port)
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return u.String()
}

// Behind a real PgBouncer in transaction pooling, LISTEN cannot work (the
// server session is another client's between transactions): the worker
// says so once and polls; its jobs all run. In session pooling LISTEN
// works, and a job on an idle queue starts before the next poll.
func TestWorkerBehindPgBouncer(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	t.Run("transaction", func(t *testing.T) {
		logger, logs := debugLogger()
		c := e.client(e.pool(pgBouncer(t, e.workerDB, "transaction")), goclient.Config{Logger: logger})
		started, stop := startedWorker(t, c, 200*time.Millisecond, nil)
		waitFor(t, 30*time.Second, "the worker to say that LISTEN does not work", func() bool {
			return strings.Contains(logs.String(), "LISTEN gets no notifications")
		})
		ids := e.enqueue(3)
		for _, id := range ids {
			awaitStart(t, started, id, time.Now().Add(30*time.Second), "a job behind PgBouncer in transaction pooling")
		}
		require.NoError(t, stop())
		require.Equal(t, 1, strings.Count(logs.String(), "LISTEN gets no notifications"), "said once:\n%s", logs.String())
		require.NotContains(t, logs.String(), "listening for new jobs")
	})
	t.Run("session", func(t *testing.T) {
		logger, logs := debugLogger()
		c := e.client(e.pool(pgBouncer(t, e.workerDB, "session")), goclient.Config{Logger: logger})
		start := time.Now()
		started, stop := startedWorker(t, c, wakeupPoll, nil)
		waitFor(t, 10*time.Second, "the worker to listen", func() bool {
			return strings.Contains(logs.String(), "leasefence: listening for new jobs")
		})
		id := e.enqueue(1)[0]
		awaitStart(t, started, id, start.Add(wakeupBound), "a job behind PgBouncer in session pooling")
		require.NoError(t, stop())
		require.NotContains(t, logs.String(), "LISTEN gets no notifications")
	})
}

// Any login may NOTIFY any channel, the wake-up channels too: a stranger's
// notifications make an idle worker claim at most once per 50 ms (after a
// claim woken by a notification found nothing), not once per notification.
// Claims are counted by the server (track_functions on the worker's login).
func TestStrangersNotificationsCostFewClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	u, err := url.Parse(e.workerDB)
	require.NoError(t, err)
	_, err = e.admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{u.User.Username()}.Sanitize()+" SET track_functions = 'all'")
	require.NoError(t, err)
	logger, logs := debugLogger()
	_, stop := startedWorker(t, e.worker(goclient.Config{Logger: logger}), wakeupPoll, nil)
	waitFor(t, 10*time.Second, "the worker to listen", func() bool {
		return strings.Contains(logs.String(), "leasefence: listening for new jobs")
	})
	claims := func() int64 {
		var n int64
		require.NoError(t, e.admin.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0)::bigint FROM pg_stat_user_functions
			WHERE schemaname = 'durable_jobs' AND funcname = 'claim_next_jobs'`).Scan(&n))
		return n
	}
	settled := func() int64 { // the worker's backend reports its calls within about a second of going idle
		last := claims()
		for i := 0; i < 20; i++ {
			time.Sleep(1500 * time.Millisecond)
			if n := claims(); n == last {
				return n
			} else {
				last = n
			}
		}
		t.Fatal("the claim count never settled")
		return 0
	}
	before := settled()
	stranger, err := pgx.Connect(ctx, e.db.LoginURL(t, "durable_job_auditor"))
	require.NoError(t, err)
	defer stranger.Close(ctx) //nolint:errcheck // a test session
	sum := md5.Sum([]byte(testQueue))
	channel := "leasefence_wake_" + hex.EncodeToString(sum[:])[:16]
	const notifications = 300
	start := time.Now()
	for range notifications { // spread out, so that each could wake the worker after its last claim ended
		_, err := stranger.Exec(ctx, `SELECT pg_notify($1, '')`, channel)
		require.NoError(t, err)
		time.Sleep(3 * time.Millisecond)
	}
	spam := time.Since(start)
	claimed := settled() - before
	t.Logf("%d notifications in %s made %d claims", notifications, spam.Round(time.Millisecond), claimed)
	require.Less(t, claimed, int64(notifications/3), "claims woken by notifications that found nothing are spaced out")
	require.LessOrEqual(t, claimed, int64(spam/(50*time.Millisecond))+5, "at most one claim per 50 ms, and the polls")
	require.NoError(t, stop())
}

// A job that is due but whose row another session holds (an operator's
// open transaction, here a superuser's SELECT ... FOR UPDATE) is not
// claimed, yet queue_next_due_in says a job is due now: the worker tries
// again after 20 ms, then waits twice as long each time (up to its poll
// interval), so a row held for seconds costs a handful of claims, not one
// every 20 ms. Once the row is let go, the job starts.
func TestWorkerBacksOffFromADueJobItCannotClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	u, err := url.Parse(e.workerDB)
	require.NoError(t, err)
	_, err = e.admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{u.User.Username()}.Sanitize()+" SET track_functions = 'all'")
	require.NoError(t, err)
	id := e.enqueue(1)[0]
	holder, err := e.admin.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx) //nolint:errcheck // rolled back below
	_, err = holder.Exec(ctx, `SELECT 1 FROM durable_jobs.job_record WHERE job_record_id = $1 FOR UPDATE`, id)
	require.NoError(t, err)
	claims := func() int64 {
		var n int64
		require.NoError(t, e.admin.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0)::bigint FROM pg_stat_user_functions
			WHERE schemaname = 'durable_jobs' AND funcname = 'claim_next_jobs'`).Scan(&n))
		return n
	}
	started, stop := startedWorker(t, e.worker(), wakeupPoll, nil)
	time.Sleep(3 * time.Second)
	require.NoError(t, holder.Rollback(ctx))
	awaitStart(t, started, id, time.Now().Add(wakeupBound), "the job once its row was let go")
	require.NoError(t, stop())
	var n int64
	waitFor(t, 15*time.Second, "the worker's claims to be counted", func() bool { n = claims(); return n > 0 })
	t.Logf("%d claims while the row was held for 3 s, and after", n)
	require.Less(t, n, int64(20), "a due job that cannot be claimed is retried less and less often (every 20 ms would be 150 claims)")
}
