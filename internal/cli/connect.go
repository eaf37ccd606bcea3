package cli

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/goclient"
)

// applicationName is the application_name leasectl's connections report.
const applicationName = "leasectl"

// statementTimeout bounds every statement of the data commands. Migrations
// run without a statement timeout.
const statementTimeout = 30 * time.Second

// parsePoolConfig is goclient.ParsePoolConfig with leasectl's statement
// timeout. When databaseURL does not parse, its error names the parameter
// at fault and nothing else of the string (see goclient.ConnStringError).
func parsePoolConfig(databaseURL string) (*pgxpool.Config, error) {
	cfg, err := goclient.ParsePoolConfig(databaseURL, statementTimeout)
	if err != nil {
		return nil, goclient.ConnStringError(databaseURL, func(s string) error {
			_, err := goclient.ParsePoolConfig(s, statementTimeout)
			return err
		})
	}
	return cfg, nil
}

// connectPool opens a pool to the database and checks that it answers.
func connectPool(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := parsePoolConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, goclient.ConnectError(err)
	}
	return pool, nil
}

// connectConn opens one connection without a statement timeout, for
// migrations.
func connectConn(ctx context.Context, databaseURL string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, goclient.ConnStringError(databaseURL, func(s string) error {
			_, err := pgx.ParseConfig(s)
			return err
		})
	}
	cfg.RuntimeParams["application_name"] = applicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, goclient.ConnectError(err)
	}
	return conn, nil
}
