package goclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// warningKey marks, in a connection's CustomData, that the server sent a
// WARNING since the mark was last cleared (noteWarning).
const warningKey = "leasefence.warning"

// noteWarning is the OnNotice handler of the pools ParsePoolConfig makes:
// it marks the connection when the server sends a WARNING, so that commit
// can tell a COMMIT whose wait for a synchronous standby was cancelled
// ("already committed locally") from one that was confirmed.
func noteWarning(c *pgconn.PgConn, n *pgconn.Notice) {
	if n.SeverityUnlocalized == "WARNING" {
		c.CustomData()[warningKey] = true
	}
}

// inTx runs a transaction of its own on a connection of pool (inConnTx)
// and commits it within commitTimeout (commit). ctx bounds everything else.
func inTx(ctx context.Context, pool *pgxpool.Pool, commitTimeout time.Duration, first func(*pgx.Batch), then func(pgx.Tx) error) error {
	// The connection is held until the COMMIT's answer has been read
	// (a pool's own Tx would hand it back inside Commit).
	return withConn(ctx, pool, func(conn *pgxpool.Conn) error {
		return inConnTx(ctx, conn, pgx.TxOptions{}, commitTimeout, first, then)
	})
}

// withConn runs f on a connection of pool, held until f returns.
func withConn(ctx context.Context, pool *pgxpool.Pool, f func(*pgxpool.Conn) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return f(conn)
}

// noteServer records the address of the server conn is connected to (its
// host:port, or its socket's path) as the one the client last used, and
// returns it and the one recorded before ("" when none was).
func (c *Client) noteServer(conn *pgxpool.Conn) (server, previous string) {
	server = conn.Conn().PgConn().Conn().RemoteAddr().String()
	previous, _ = c.server.Swap(server).(string)
	return server, previous
}

// lastServer is the address noteServer recorded last ("" for none).
func (c *Client) lastServer() string {
	s, _ := c.server.Load().(string)
	return s
}

// inConnTx runs one transaction with opts on a connection the caller
// holds. The statements first queues (none when nil) go out in one batch
// behind the BEGIN, so BEGIN costs no round trip of its own; their error
// is translated (translateError). When they all succeeded, then (unless
// nil) runs inside the transaction, and the COMMIT is sent alone, within
// commitTimeout (commit). On any error the transaction is rolled back.
func inConnTx(ctx context.Context, conn *pgxpool.Conn, opts pgx.TxOptions, commitTimeout time.Duration,
	first func(*pgx.Batch), then func(pgx.Tx) error,
) error {
	b := &pgx.Batch{}
	b.BeginTx(opts)
	if first != nil {
		first(b)
	}
	results := conn.SendBatch(ctx, b)
	tx := results.Tx()
	// Nothing to do after a COMMIT, nor when the BEGIN failed (the batch
	// then closed tx).
	defer func() { _ = tx.Rollback(ctx) }()
	if err := results.Close(); err != nil {
		return translateError(err)
	}
	if then != nil {
		if err := then(tx); err != nil {
			return err
		}
	}
	return commit(ctx, tx, commitTimeout)
}

// commit sends COMMIT with a deadline of timeout. A COMMIT that does not
// answer in time, or answers with a WARNING (its wait for a synchronous
// standby was cancelled), returns ErrCommitTimeout: its outcome is
// unknown. When the deadline passed, the server is asked to stop waiting
// (a cancel request), so a stalled standby does not keep the backend, and
// the transaction's row locks, for ever; the transaction stays committed
// locally or not, as it was.
func commit(ctx context.Context, tx pgx.Tx, timeout time.Duration) error {
	conn := tx.Conn().PgConn()
	delete(conn.CustomData(), warningKey)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := tx.Commit(cctx)
	switch {
	case err == nil && conn.CustomData()[warningKey] == true:
		return fmt.Errorf("%w (the COMMIT answered with a WARNING)", ErrCommitTimeout)
	case err != nil && cctx.Err() != nil:
		rctx, rcancel := context.WithTimeout(context.Background(), timeout)
		defer rcancel()
		_ = conn.CancelRequest(rctx)
		return fmt.Errorf("%w: %w", ErrCommitTimeout, err)
	}
	return err
}

// unavailableReason is the reason a failed claim or transaction gives the
// worker's breaker: the commit deadline passed, the call ran out of time,
// none for an ERROR the database answered (it is there), or else the
// connection failed (a FATAL answer included).
func unavailableReason(err error) UnavailableReason {
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, ErrCommitTimeout):
		return UnavailableCommitTimeout
	case errors.Is(err, context.DeadlineExceeded):
		return UnavailableTimeout
	case errors.As(err, &pgErr) && pgErr.SeverityUnlocalized == "ERROR":
		return ""
	}
	return UnavailableConnectionLost
}
