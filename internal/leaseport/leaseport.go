package leaseport

import (
	"context"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/goclient"
)

// The hooks goclient keeps unexported for this package (goclient/hook.go).

//go:linkname hookNewPgRenewalPort github.com/mightyetl/leasefence/goclient.hookNewPgRenewalPort
var hookNewPgRenewalPort func(pool *pgxpool.Pool, attemptTimeout time.Duration) any

//go:linkname hookWithRenewalPort github.com/mightyetl/leasefence/goclient.hookWithRenewalPort
var hookWithRenewalPort func(cfg goclient.Config, port any) goclient.Config

//go:linkname hookWithClock github.com/mightyetl/leasefence/goclient.hookWithClock
var hookWithClock func(cfg goclient.Config, wall any) goclient.Config

// Port is the narrow port through which the heartbeat renews claims. Its
// input is the exact claims (job id, token and owner each); its output is
// one RenewalResult per claim, in input order, holding only the outcome,
// the database's expiry and the database's time. All claims of one call
// belong to one owner.
type Port interface {
	// RenewClaims makes one renewal attempt for every claim, within ctx. An
	// error means the whole attempt failed and must never be read as a
	// renewal.
	RenewClaims(ctx context.Context, claims []goclient.Claim) ([]goclient.RenewalResult, error)
}

// NewPg returns the PostgreSQL port a Client uses by default, over pool:
// one short transaction per attempt, within attemptTimeout (zero: each
// attempt's own, from the claims' renewal intervals; 5 s outside a
// heartbeat). Give it a pool of its own, never one that handlers use.
func NewPg(pool *pgxpool.Pool, attemptTimeout time.Duration) Port {
	return hookNewPgRenewalPort(pool, attemptTimeout).(Port)
}

// WallClock is the application wall clock a Client reads, only for its
// database clock offset signal.
type WallClock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
}

// WithClock returns cfg with its wall clock set to clock: a skewed clock
// moves the database clock offset signal and nothing else.
func WithClock(cfg goclient.Config, clock WallClock) goclient.Config {
	return hookWithClock(cfg, clock)
}

// With returns cfg with its renewal port set to port: a Client made with
// it sends every renewal attempt to port.
func With(cfg goclient.Config, port Port) goclient.Config {
	return hookWithRenewalPort(cfg, port)
}
