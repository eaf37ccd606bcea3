package goclient

import (
	"context"
	"time"
)

// renewalPort is the narrow port through which the heartbeat renews claims.
// Its input is the exact claims (job id, token and owner each); its output
// is one RenewalResult per claim, in input order, holding only the outcome,
// the database's expiry and the database's time: no payload, nothing else.
// All claims of one call belong to one owner: a claim whose owner differs
// from the first claim's is judged by the database, and so comes back stale.
// The production adapter is newPgRenewalPort. It is not exported: the
// module's tests, benchmarks, demo and fault campaign set one through
// internal/leaseport, which wraps or replaces the database.
type renewalPort interface {
	// RenewClaims makes one renewal attempt for every claim, within ctx. An
	// error means the whole attempt failed and must never be read as a
	// renewal.
	RenewClaims(ctx context.Context, claims []Claim) ([]RenewalResult, error)
}

// RenewalResult is the database's answer for one claim.
type RenewalResult struct {
	// Outcome is RenewalRenewed, RenewalStale or RenewalDisabled.
	Outcome RenewalOutcome
	// LeaseExpiresAt is the new expiry (renewed), the unchanged expiry
	// (renewal_disabled) or the zero time (stale), in database time.
	LeaseExpiresAt time.Time
	// DatabaseTime is the database's clock_timestamp() at the decision.
	DatabaseTime time.Time
}

// Granted returns LeaseExpiresAt minus DatabaseTime: how long the lease is
// valid from the moment the database decided, independent of any clock
// outside the database.
func (r RenewalResult) Granted() time.Duration { return r.LeaseExpiresAt.Sub(r.DatabaseTime) }
