package goclient

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// discardLogger is the default logger: it drops every record.
var discardLogger = slog.New(slog.DiscardHandler)

// Logger returns the client's logger (a logger that drops everything when
// Config.Logger was nil).
func (c *Client) Logger() *slog.Logger { return c.cfg.Logger }

// claimAttr is a claim's public fields as one slog group; the token is
// "[REDACTED]".
func claimAttr(claim Claim) slog.Attr { return slog.Any("claim", claim) }

// logLeaseLost is the heartbeat's record of a lost claim: call it where the
// client stops trusting a claim (a stale renewal, the trust deadline
// passed), with the LossCause and the error the lease's context is
// cancelled with. A release (LossReleased) is expected and logged at INFO.
func (c *Client) logLeaseLost(claim Claim, cause LossCause, err error) {
	level := slog.LevelWarn
	if cause == LossReleased {
		level = slog.LevelInfo
	}
	c.cfg.Logger.LogAttrs(context.Background(), level, "leasefence: lease lost",
		claimAttr(claim), slog.String("cause", string(cause)), slog.String("error", errorText(err)))
}

// logRenewalAttemptFailed is the heartbeat's record of a failed renewal
// attempt that it retries after retryIn while the trust deadline allows.
func (c *Client) logRenewalAttemptFailed(claim Claim, err error, retryIn time.Duration) {
	c.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "leasefence: renewal attempt failed",
		claimAttr(claim), slog.String("error", errorText(err)), slog.Duration("retry_in", retryIn))
}

// errorText is err's text, or "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// panicText is a recovered panic value as text.
func panicText(recovered any) string { return fmt.Sprint(recovered) }
