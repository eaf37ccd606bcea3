package clienthook

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	// NewPgRenewalPort returns goclient's PostgreSQL renewal port over
	// pool.
	NewPgRenewalPort func(pool *pgxpool.Pool, attemptTimeout time.Duration) any
	// WithRenewalPort returns the goclient.Config cfg with its renewal
	// port set to port.
	WithRenewalPort func(cfg, port any) any
	// WithClock returns the goclient.Config cfg with its wall clock set to
	// clock.
	WithClock func(cfg, clock any) any
)
