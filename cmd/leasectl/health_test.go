package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// leasectl health only reads, so it starts no heartbeat and opens no pool
// beside its own: caught while its read waits on a lock, the process's
// goroutine dump (SIGQUIT) shows one goroutine created by
// pgxpool.NewWithConfig and none by goclient's newHeartbeat. (With a whole
// Client, as before the Admin, it showed two and one.)
func TestHealthStartsNoHeartbeatAndNoSecondPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	locker, err := admin.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = locker.Rollback(ctx) })
	_, err = locker.Exec(ctx, `LOCK TABLE durable_jobs.job_record IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	cmd := exec.Command(leasectlBin, "health", "--database-url", db.LoginURL(t, "durable_job_auditor"))
	cmd.Env = cleanEnv("GOTRACEBACK=all")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity
			WHERE datname = pg_catalog.current_database() AND application_name = 'leasectl' AND wait_event_type = 'Lock')`).
			Scan(&waiting))
		if waiting {
			break
		}
		require.True(t, time.Now().Before(deadline), "leasectl health never waited on the lock")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGQUIT))
	require.Error(t, cmd.Wait(), "SIGQUIT ends the process with its goroutine dump")
	dump := stderr.String()
	require.Contains(t, dump, "goroutine ", "a goroutine dump")
	require.Contains(t, dump, "(*Pool).backgroundHealthCheck", "the dump shows pool goroutines")
	require.Equal(t, 1, strings.Count(dump, "created by github.com/jackc/pgx/v5/pgxpool.NewWithConfig in goroutine"),
		"one pool: leasectl's own")
	require.NotContains(t, dump, "goclient.newHeartbeat", "no heartbeat")
	require.Empty(t, stdout.String())
}
