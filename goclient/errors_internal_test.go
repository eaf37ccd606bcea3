package goclient

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// translateError maps each project SQLSTATE that real PostgreSQL raises to
// its sentinel and keeps PostgreSQL's error reachable.
func TestTranslateErrorMapsRealSQLStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	worker := db.LoginPool(t, "durable_job_worker")
	for _, tc := range []struct {
		q        querierFunc
		sql      string
		sentinel error
		code     string
	}{
		{admin.Exec, `SELECT durable_jobs.set_queue_lease_policy('etl.orders', '1 s', '900 ms', '1 h', true, 'too long an interval')`,
			ErrInvalidPolicy, SQLStateInvalidPolicy},
		{worker.Exec, `SELECT durable_jobs.claim_next_job('Bad Queue', 'worker-1')`, ErrInvalidArgument, SQLStateInvalidArgument},
		{worker.Exec, `SELECT durable_jobs.complete_job(1, gen_random_uuid(), 'worker-1')`, ErrStaleClaim, SQLStateStaleClaim},
		{worker.Exec, `SELECT durable_jobs.replay_job(1)`, ErrPermissionDenied, SQLStatePermissionDenied},
	} {
		_, err := tc.q(ctx, tc.sql)
		err = translateError(err)
		require.ErrorIs(t, err, tc.sentinel, tc.sql)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr))
		require.Equal(t, tc.code, pgErr.Code)
		require.Contains(t, err.Error(), "(SQLSTATE "+tc.code+")")
	}
	_, err := worker.Exec(ctx, `SELECT 1/0`)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(translateError(err), &pgErr))
	var dbErr *DatabaseError
	require.False(t, errors.As(translateError(err), &dbErr), "other SQLSTATEs pass through unchanged")
}

type querierFunc func(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)

// TestLostConnErrorKeepsWhatItWraps: a TxHandler transaction that lost its
// connection more often than it may run again is handled as what it wraps
// (a handler's error, a terminal write's): errors.As and errors.Is see
// through it.
func TestLostConnErrorKeepsWhatItWraps(t *testing.T) {
	t.Parallel()
	handler := &handlerError{errors.New("upstream gone")}
	var he *handlerError
	require.ErrorAs(t, &lostConnError{handler}, &he)
	require.Same(t, handler, he)
	require.ErrorIs(t, &lostConnError{ErrStaleClaim}, ErrStaleClaim)
}
