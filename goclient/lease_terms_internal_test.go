package goclient

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// termsJob is a claim of queue etl.terms granted lease, renewed every interval.
func termsJob(lease, interval time.Duration) Job {
	now := time.Now()
	return Job{claim: Claim{queue: "etl.terms"}, databaseTime: now, leaseExpiresAt: now.Add(lease), renewalInterval: interval}
}

// Each claim's lease is checked with the configuration's rules and exact
// messages (those of Config.Validate: zero, equal-to-lease and insufficient-margin
// intervals included), the refusal naming the queue and both values.
func TestClaimTermsAreCheckedWithTheConfigurationRules(t *testing.T) {
	t.Parallel()
	cfg := Config{SafetyMargin: time.Second}.withDefaults()
	for name, tc := range map[string]struct {
		cfg                    Config
		job                    Job
		setting, clientSetting string
		database, client       time.Duration
		msg                    string
	}{
		"zero lease":          {cfg, termsJob(0, time.Second), "lease duration", "safety margin", 0, time.Second, msgLeaseNotPositive},
		"zero interval":       {cfg, termsJob(3*time.Second, 0), "renewal interval", "attempt timeout", 0, 0, msgIntervalNotPositive},
		"interval = lease":    {cfg, termsJob(3*time.Second, 3*time.Second), "lease duration", "renewal interval", 3 * time.Second, 3 * time.Second, msgIntervalNotShorter},
		"insufficient margin": {cfg, termsJob(3*time.Second, 2*time.Second), "lease duration", "safety margin", 3 * time.Second, time.Second, msgInsufficientMargin},
		"margin overflows":    {Config{SafetyMargin: math.MaxInt64}, termsJob(3*time.Second, time.Second), "lease duration", "safety margin", 3 * time.Second, math.MaxInt64, msgInsufficientMargin},
		"attempt too long": {Config{SafetyMargin: time.Second, AttemptTimeout: time.Second}, termsJob(30*time.Second, time.Second),
			"renewal interval", "attempt timeout", time.Second, time.Second, msgAttemptTimeoutTooLong},
		"lease below bound": {Config{SafetyMargin: time.Second, LeaseDuration: 30 * time.Second}, termsJob(20*time.Second, time.Second),
			"lease duration", "lease duration", 20 * time.Second, 30 * time.Second, msgLeaseBelowBound},
	} {
		t.Run(name, func(t *testing.T) {
			_, rej := tc.cfg.terms(tc.job)
			require.NotNil(t, rej)
			require.Equal(t, ConfigurationRejectedError{Queue: "etl.terms", Setting: tc.setting, Database: tc.database,
				ClientSetting: tc.clientSetting, Client: tc.client, Message: tc.msg}, *rej)
			require.ErrorIs(t, rej, ErrConfigurationRejected)
			require.Contains(t, rej.Error(), `queue "etl.terms": `+tc.msg)
		})
	}

	// Within the rules: the policy's interval, or the bound when shorter;
	// the attempt timeout is half the interval unless configured.
	terms, rej := cfg.terms(termsJob(30*time.Second, 10*time.Second))
	require.Nil(t, rej)
	require.Equal(t, leaseTerms{lease: 30 * time.Second, interval: 10 * time.Second, attemptTimeout: 5 * time.Second}, terms)
	bounded := Config{SafetyMargin: time.Second, RenewalInterval: 2 * time.Second, LeaseDuration: 30 * time.Second}
	terms, rej = bounded.terms(termsJob(30*time.Second, 10*time.Second))
	require.Nil(t, rej)
	require.Equal(t, leaseTerms{lease: 30 * time.Second, interval: 2 * time.Second, attemptTimeout: time.Second}, terms)
	terms, rej = bounded.terms(termsJob(60*time.Second, time.Second))
	require.Nil(t, rej)
	require.Equal(t, time.Second, terms.interval, "a bound longer than the policy's interval leaves the policy's")
}

// The heartbeat schedules each lease by its own claim's interval: two real
// claims of one client under two policies (changed between the claims by
// another session) are due one of their own intervals after their claims.
func TestHeartbeatSchedulesEachLeaseByItsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const queue = "etl.terms"
	db := testdb.New(t)
	admin := db.Pool(t)
	setPolicy := func(lease, interval time.Duration) {
		_, err := admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, '1 h', true, 'terms test')`,
			queue, lease, interval)
		require.NoError(t, err)
	}
	setPolicy(2*time.Second, 500*time.Millisecond)
	producer, err := NewClient(db.LoginPool(t, "durable_job_producer"), Config{})
	require.NoError(t, err)
	defer producer.Close()
	for range 2 {
		_, err := producer.Enqueue(ctx, EnqueueParams{Queue: queue, Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	c, err := NewClient(db.LoginPool(t, "durable_job_worker"), Config{SafetyMargin: 400 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	first, err := c.Claim(ctx, queue)
	require.NoError(t, err)
	setPolicy(3*time.Second, time.Second)
	second, err := c.Claim(ctx, queue)
	require.NoError(t, err)
	l1, l2 := c.Keep(ctx, first), c.Keep(ctx, second)
	defer l1.Stop()
	defer l2.Stop()
	c.hb.mu.Lock()
	defer c.hb.mu.Unlock()
	require.Equal(t, first.sentAt.Add(500*time.Millisecond), l1.nextDue)
	require.Equal(t, second.sentAt.Add(time.Second), l2.nextDue)
	require.Equal(t, leaseTerms{lease: 2 * time.Second, interval: 500 * time.Millisecond, attemptTimeout: 250 * time.Millisecond}, l1.terms)
	require.Equal(t, leaseTerms{lease: 3 * time.Second, interval: time.Second, attemptTimeout: 500 * time.Millisecond}, l2.terms)
}

// The production port's attempt timeout: its own when it has one, else the
// heartbeat's for the attempt, else the default.
func TestPgRenewalPortAttemptTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := &pgRenewalPort{attemptTimeout: time.Second}
	require.Equal(t, time.Second, own.timeout(withAttemptTimeout(ctx, 2*time.Second)))
	derived := &pgRenewalPort{}
	require.Equal(t, 2*time.Second, derived.timeout(withAttemptTimeout(ctx, 2*time.Second)))
	require.Equal(t, defaultAttemptTimeout, derived.timeout(ctx))
}
