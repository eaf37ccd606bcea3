package goclient

import (
	"time"
	_ "unsafe" // for go:linkname

	"github.com/jackc/pgx/v5/pgxpool"
)

// The module's tests, benchmarks, demo and fault campaign wrap or replace
// the renewal port and skew the wall clock. Neither test seam is part of
// the public API, and goclient imports nothing of the module, so these
// hooks are unexported variables that internal/leaseport reaches with a
// linkname directive and wraps in typed functions.

//go:linkname hookNewPgRenewalPort
//lint:ignore U1000 used by internal/leaseport through the linkname
var hookNewPgRenewalPort = func(pool *pgxpool.Pool, attemptTimeout time.Duration) any {
	return newPgRenewalPort(pool, attemptTimeout)
}

//go:linkname hookWithRenewalPort
//lint:ignore U1000 used by internal/leaseport through the linkname
var hookWithRenewalPort = func(cfg Config, port any) Config {
	cfg.renewalPort = port.(renewalPort)
	return cfg
}

//go:linkname hookWithClock
//lint:ignore U1000 used by internal/leaseport through the linkname
var hookWithClock = func(cfg Config, wall any) Config {
	cfg.clock = wall.(clock)
	return cfg
}
