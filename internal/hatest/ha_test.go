package hatest

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/goclient"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const (
	queue     = "etl.ha"
	batchSize = 150
	// The lease policy of the runs the issue reports: a 5 s lease renewed
	// every second; the client's margin is one interval.
	lease    = 5 * time.Second
	interval = time.Second
)

// floor is the least fencing generation a claim on timeline tl gets
// (migration 011): ((tl - 1) << 40) + 1.
func floor(tl int) int64 { return (int64(tl-1) << 40) + 1 }

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// run is one handler run as the test saw it.
type run struct {
	job, generation int64
	attempt         int
	phase           int32 // events begun when it ran: 0 none, i the scenario's event i
}

type runLog struct {
	mu   sync.Mutex
	runs []run
}

func (l *runLog) add(r run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
}

func (l *runLog) all() []run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]run(nil), l.runs...)
}

// TestWorkerThroughSwitchoverAndCrashFailover runs a TxHandler worker on a
// multi-host URL (target_session_attrs=read-write) against etcd and two
// Patroni members in synchronous mode, through one planned switchover and
// one crash failover (kill -9 of the leader's postmaster), and checks what
// must hold (runScenario): every job completed exactly once in the
// database, no stale write to the fenced target, generations above every
// earlier timeline's after each promotion, no attempt charged by either
// event (migration 029), each promotion recorded once as evidence and shown
// by the server's availability (migration 031); then that the standby
// refuses writes, and that the audit and the migrator call it a standby.
func TestWorkerThroughSwitchoverAndCrashFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t, true)
	f := runScenario(t, ctx, c, true, []event{switchover, crash})
	// The standby refuses writes: the worker's claim fails there with
	// read_only_sql_transaction.
	_, standby := c.leader()
	conn, err := pgx.Connect(ctx, c.url("ha_worker", f.workerPassword, "leasefence", []*member{standby}, url.Values{}))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var inRecovery bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery))
	require.True(t, inRecovery)
	_, err = conn.Exec(ctx, `SELECT * FROM durable_jobs.claim_next_job($1, 'ha-test')`, queue)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "the standby refused the claim: %v", err)
	require.Equal(t, "25006", pgErr.Code)
	standbyPool, err := goclient.NewPool(ctx, c.url("ha_worker", f.workerPassword, "leasefence", []*member{standby}, url.Values{}), 0)
	require.NoError(t, err)
	defer standbyPool.Close()
	onStandby, err := goclient.NewClient(standbyPool, goclient.Config{SafetyMargin: interval, AttemptTimeout: interval * 4 / 5})
	require.NoError(t, err)
	defer onStandby.Close()
	_, err = onStandby.Claim(ctx, queue)
	require.Error(t, err, "a client pointed at the standby cannot claim")

	// The tools pointed at the Patroni replica say it is a standby (issue
	// 36, item 3): the audit reports AUDIT-SERVER-IS-PRIMARY, and the
	// migrator refuses to run there.
	superStandby, err := pgx.Connect(ctx, c.url(superuser, c.password, "leasefence", []*member{standby}, url.Values{}))
	require.NoError(t, err)
	defer superStandby.Close(ctx)
	report, err := audit.Run(ctx, superStandby)
	require.NoError(t, err)
	require.False(t, report.Passed, "the audit of a standby fails")
	primaryCheck := -1
	for i, check := range report.Checks {
		if check.ID == controls.CheckServerIsPrimary {
			primaryCheck = i
		}
	}
	require.NotEqual(t, -1, primaryCheck, "the audit ran %s", controls.CheckServerIsPrimary)
	require.False(t, report.Checks[primaryCheck].Passed, "the audit finds the server is a standby")
	_, err = sqlbundle.NewMigrator(ctx, superStandby)
	require.ErrorIs(t, err, sqlbundle.ErrStandby, "the migrator refuses a standby")
}
