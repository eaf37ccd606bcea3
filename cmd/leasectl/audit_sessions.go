package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// rowHoldingRoles are the runtime roles whose calls lock job rows: a
// worker's terminal calls and a producer's or operator's cancel. A session
// of theirs left open after such a call holds the row, and so blocks
// reclaim and cancel, for as long as it stays open.
var rowHoldingRoles = []string{"durable_job_producer", "durable_job_worker", "durable_job_operator"}

// checkRuntimeLoginTimeouts: every login that can lock job rows has both a
// statement_timeout and an idle_in_transaction_session_timeout in force
// (its own, its database's or the server's), so a row it locks is held for
// a bounded time: at most the longest statement plus the longest idle gap.
// PostgreSQL 15 has no limit on a whole transaction; these two bound how
// long one can hold a lock without doing anything.
func checkRuntimeLoginTimeouts(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	logins, settings, err := loginSettings(ctx, pool, rowHoldingRoles, "statement_timeout", "idle_in_transaction_session_timeout")
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, login := range logins {
		for _, name := range []string{"statement_timeout", "idle_in_transaction_session_timeout"} {
			if isZero(settings[login][name]) {
				findings = append(findings, fmt.Sprintf("login %s: %s is 0 (no limit), so a job row it locks can be held for ever, "+
					"blocking reclaim and cancel: ALTER ROLE ... SET %s (see the runbook)", login, name, name))
			}
		}
	}
	return findings, nil
}
