package goclient

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/internal/clienthook"
)

// The module's tests, benchmarks, demo and fault campaign wrap or replace
// the renewal port and skew the wall clock; internal/leaseport gives them
// typed access to both through these hooks, so neither test seam is part
// of the public API.
func init() {
	clienthook.NewPgRenewalPort = func(pool *pgxpool.Pool, attemptTimeout time.Duration) any {
		return newPgRenewalPort(pool, attemptTimeout)
	}
	clienthook.WithRenewalPort = func(cfg, port any) any {
		c := cfg.(Config)
		c.renewalPort = port.(renewalPort)
		return c
	}
	clienthook.WithClock = func(cfg, wall any) any {
		c := cfg.(Config)
		c.clock = wall.(clock)
		return c
	}
}
