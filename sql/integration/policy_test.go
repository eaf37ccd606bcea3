package sqlintegration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The database refuses a renewal interval that is zero,
// negative, equal to the lease or leaves too small a safety margin (more
// than a third of the lease), with LF002 and nothing changed; the bounds
// themselves are accepted.
func TestPolicyRejectsUnsafeRenewalIntervals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	operator := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	const fresh = "it_policy_fresh"

	type policyRow struct {
		Lease, Renewal, MaxLife time.Duration
		Enabled                 bool
	}
	policyOf := func(queue string) (policyRow, bool) {
		t.Helper()
		rows, err := operator.Query(f.ctx,
			"SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled FROM durable_jobs.queue_lease_policies() WHERE queue_name = $1",
			queue)
		require.NoError(t, err)
		defer rows.Close()
		var p policyRow
		found := false
		for rows.Next() {
			require.NoError(t, rows.Scan(&p.Lease, &p.Renewal, &p.MaxLife, &p.Enabled))
			found = true
		}
		require.NoError(t, rows.Err())
		return p, found
	}
	evidenceCount := func() int {
		t.Helper()
		var n int
		require.NoError(t, operator.QueryRow(f.ctx, "SELECT count(*) FROM durable_jobs.control_evidence_history(NULL)").Scan(&n))
		return n
	}
	set := func(queue string, lease, renewal time.Duration) error {
		_, err := operator.Exec(f.ctx, "SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, true, $5)",
			queue, lease, renewal, time.Hour, "tighten renewal for the nightly load")
		return err
	}

	before, ok := policyOf(f.queue)
	require.True(t, ok)
	require.Equal(t, policyRow{testLeaseDuration, testRenewalInterval, testMaxClaimLife, true}, before)
	evidenceBefore := evidenceCount()

	unsafe := []struct {
		why     string
		lease   time.Duration
		renewal time.Duration
	}{
		{"a zero renewal interval is rejected", time.Second, 0},
		{"a negative renewal interval is rejected", time.Second, -time.Second},
		{"a renewal interval equal to the lease is rejected", time.Second, time.Second},
		{"a renewal interval longer than the lease is rejected", time.Second, 2 * time.Second},
		{"a renewal interval leaving less than two intervals of margin is rejected", time.Second, 334 * time.Millisecond},
		{"half the lease is an insufficient safety margin", 10 * time.Second, 5 * time.Second},
		{"a renewal interval below 100 ms is rejected", time.Second, 99 * time.Millisecond},
	}
	for _, u := range unsafe {
		for _, queue := range []string{f.queue, fresh} {
			requireSQLState(t, set(queue, u.lease, u.renewal), "LF002", u.why)
		}
	}
	_, err := operator.Exec(f.ctx, "SELECT durable_jobs.set_queue_lease_policy($1, $2, NULL, $3, true, $4)",
		f.queue, time.Second, time.Hour, "a NULL interval")
	requireSQLState(t, err, "LF002", "a NULL renewal interval is rejected")

	after, ok := policyOf(f.queue)
	require.True(t, ok)
	require.Equal(t, before, after, "rejected changes left the queue's policy as it was")
	_, ok = policyOf(fresh)
	require.False(t, ok, "rejected changes created no policy for a new queue")
	require.Equal(t, evidenceBefore, evidenceCount(), "rejected changes recorded no evidence")

	// A claim under the unchanged policy still gets the old interval.
	f.enqueue(t, `{"extract": "accounts"}`)
	c := mustClaim(t, f.ctx, f.worker(t), f.queue, "worker-a")
	require.Equal(t, testRenewalInterval, c.RenewalInterval, "claims still get the accepted policy's interval")

	// The bounds are accepted: exactly a third of the lease, and 100 ms.
	require.NoError(t, set(fresh, 9*time.Second, 3*time.Second), "a renewal interval of exactly lease / 3 is accepted")
	p, ok := policyOf(fresh)
	require.True(t, ok)
	require.Equal(t, 3*time.Second, p.Renewal)
	require.NoError(t, set(fresh, time.Second, 100*time.Millisecond), "a renewal interval of 100 ms is accepted")
	require.NoError(t, set(fresh, time.Second, 333*time.Millisecond), "333 ms under a 1 s lease keeps the margin")
	require.Equal(t, evidenceBefore+3, evidenceCount(), "each accepted change recorded evidence")
}
