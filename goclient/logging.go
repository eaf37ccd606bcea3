package goclient

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// discardLogger is the default logger: it drops every record.
var discardLogger = slog.New(slog.DiscardHandler)

// claimAttr is a claim's public fields as one slog group; the token is
// "[REDACTED]".
func claimAttr(claim Claim) slog.Attr { return slog.Any("claim", claim) }

// The bounded causes the log records give for a lease that ended, a
// worker that stopped claiming, a handler that was cancelled (attribute
// "cause"; see Logging in the package documentation). They are log
// values only: the metrics keep LossCause and UnavailableReason.
const (
	// causeStale: the database answered that the claim is no longer live
	// (the job was cancelled, or its expired claim was taken over).
	causeStale = "stale"
	// causeFailover: the database answered stale for a claim made on an
	// earlier WAL timeline than one a worker of the client has seen since:
	// the claim was made before a promotion.
	causeFailover = "failover"
	// causeTrustDeadline: no renewal was confirmed before the trust
	// deadline, although no attempt failed (none answered in time).
	causeTrustDeadline = "trust_deadline"
	// causeDatabaseUnavailable: the trust deadline passed while renewal
	// attempts failed: the database did not answer.
	causeDatabaseUnavailable = "database_unavailable"
	// causeReleased: the claim was given up (a worker's shutdown, Release).
	causeReleased = "released"
	// causeClosed: the client was closed.
	causeClosed = "closed"
	// causeStopped: the lease was stopped after the job's terminal write.
	causeStopped = "stopped"
	// causeCancelled: the context the lease was kept under was cancelled.
	causeCancelled = "cancelled"
)

// logLeaseLost is the heartbeat's record of a claim it stopped trusting (a
// stale renewal, the trust deadline passed), with its bounded cause.
func logLeaseLost(logger *slog.Logger, claim Claim, cause string) {
	logger.LogAttrs(context.Background(), slog.LevelWarn, "leasefence: lease lost",
		claimAttr(claim), slog.String("cause", cause))
}

// logRenewalAttemptFailed is the heartbeat's record of a failed renewal
// attempt that it retries after retryIn while the trust deadline allows.
func (c *Client) logRenewalAttemptFailed(claim Claim, err error, retryIn time.Duration) {
	c.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "leasefence: renewal attempt failed",
		claimAttr(claim), slog.String("error", err.Error()), slog.Duration("retry_in", retryIn))
}

// panicText is a recovered panic value as text.
func panicText(recovered any) string { return fmt.Sprint(recovered) }
