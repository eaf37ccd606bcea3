package goclient_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// Unsafe settings are refused at construction with exact
// messages: negative, equal-to-lease and insufficient-margin intervals, and
// attempt timeouts that do not fit inside the interval. (A zero lease or
// interval is no bound: the claim's policy decides, and each claim's lease
// is checked by the same rules, zero included, in lease_terms_internal_test.go
// and TestClaimOfAPolicyTheClientCannotKeepIsRefusedAndReleased.)
func TestConfigRejectsUnsafeIntervals(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	pool := e.pool(e.workerDB)
	ok := goclient.Config{LeaseDuration: 3 * time.Second, RenewalInterval: time.Second, SafetyMargin: time.Second}
	with := func(change func(*goclient.Config)) goclient.Config {
		c := ok
		change(&c)
		return c
	}
	for name, tc := range map[string]struct {
		cfg   goclient.Config
		field string
		want  string
	}{
		"negative interval":     {with(func(c *goclient.Config) { c.RenewalInterval = -time.Second }), "RenewalInterval", "renewal interval must be greater than zero"},
		"interval equal lease":  {with(func(c *goclient.Config) { c.RenewalInterval = 3 * time.Second }), "RenewalInterval", "renewal interval must be shorter than the lease duration"},
		"interval beyond lease": {with(func(c *goclient.Config) { c.RenewalInterval = 4 * time.Second }), "RenewalInterval", "renewal interval must be shorter than the lease duration"},
		"insufficient margin": {with(func(c *goclient.Config) { c.RenewalInterval, c.SafetyMargin = 2*time.Second, 600*time.Millisecond }),
			"RenewalInterval", "renewal interval plus attempt timeout plus safety margin must not exceed the lease duration"},
		// The sum of the three durations wraps around: once it passed as a
		// negative sum, well under the lease.
		"margin overflows sum": {with(func(c *goclient.Config) { c.SafetyMargin = math.MaxInt64 }),
			"RenewalInterval", "renewal interval plus attempt timeout plus safety margin must not exceed the lease duration"},
		"interval and margin overflow sum": {with(func(c *goclient.Config) {
			c.LeaseDuration, c.RenewalInterval, c.AttemptTimeout, c.SafetyMargin = math.MaxInt64, math.MaxInt64-2, 1, 3
		}), "RenewalInterval", "renewal interval plus attempt timeout plus safety margin must not exceed the lease duration"},
		"negative lease": {with(func(c *goclient.Config) { c.LeaseDuration = -time.Second }), "LeaseDuration", "lease duration must be greater than zero"},
		// A zero margin is the default, 5 s: too much for a 3 s lease bound.
		"zero margin is the default": {with(func(c *goclient.Config) { c.SafetyMargin = 0 }), "RenewalInterval",
			"renewal interval plus attempt timeout plus safety margin must not exceed the lease duration"},
		"negative margin":         {with(func(c *goclient.Config) { c.SafetyMargin = -time.Second }), "SafetyMargin", "safety margin must be greater than zero"},
		"attempt negative":        {with(func(c *goclient.Config) { c.AttemptTimeout = -time.Second }), "AttemptTimeout", "attempt timeout must not be negative"},
		"commit timeout negative": {with(func(c *goclient.Config) { c.CommitTimeout = -time.Second }), "CommitTimeout", "commit timeout must not be negative"},
		"attempt = interval":      {with(func(c *goclient.Config) { c.AttemptTimeout = time.Second }), "AttemptTimeout", "attempt timeout must be shorter than the renewal interval"},
		"attempt = interval bound, no lease bound": {with(func(c *goclient.Config) { c.LeaseDuration, c.AttemptTimeout = 0, time.Second }),
			"AttemptTimeout", "attempt timeout must be shorter than the renewal interval"},
		"in-flight negative": {with(func(c *goclient.Config) { c.MaxInFlightRenewals = -1 }), "MaxInFlightRenewals", "max in-flight renewals must not be negative"},
		"renewal pool below in-flight": {with(func(c *goclient.Config) { c.MaxInFlightRenewals, c.RenewalPoolSize = 8, 4 }),
			"RenewalPoolSize", "renewal pool size must not be smaller than max in-flight renewals"},
		"renewal pool negative": {with(func(c *goclient.Config) { c.RenewalPoolSize = -1 }),
			"RenewalPoolSize", "renewal pool size must not be smaller than max in-flight renewals"},
		"owner malformed": {with(func(c *goclient.Config) { c.OwnerID = "worker one" }), "OwnerID", "owner id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := goclient.NewClient(pool, tc.cfg)
			require.Nil(t, c)
			require.ErrorIs(t, err, goclient.ErrInvalidConfig)
			var ce *goclient.ConfigError
			require.True(t, errors.As(err, &ce))
			require.Equal(t, tc.field, ce.Field)
			require.Equal(t, tc.want, ce.Message)
			require.Equal(t, "leasefence: invalid client configuration: "+tc.want, err.Error())
			require.ErrorIs(t, tc.cfg.Validate(), goclient.ErrInvalidConfig)
		})
	}

	_, err := goclient.NewClient(nil, ok)
	var ce *goclient.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "pool", ce.Field)
	require.Equal(t, "pool must not be nil", ce.Message)

	// The margin rule is exact: interval + attempt timeout + margin == lease is allowed.
	edge := with(func(c *goclient.Config) {
		c.AttemptTimeout = 500 * time.Millisecond
		c.SafetyMargin = 1500 * time.Millisecond
	})
	require.NoError(t, edge.Validate())
	c, err := goclient.NewClient(pool, edge)
	require.NoError(t, err)
	defer c.Close()
	got := c.Config()
	require.Equal(t, 4, got.MaxInFlightRenewals)
	require.Equal(t, goclient.DefaultCommitTimeout, got.CommitTimeout, "the commit timeout defaults to 5 s")
	require.Regexp(t, `^leasefence-[0-9a-f]{16}$`, c.Config().OwnerID)
	require.Equal(t, got.OwnerID, c.Config().OwnerID)

	d, err := goclient.NewClient(pool, ok)
	require.NoError(t, err)
	defer d.Close()
	require.Zero(t, d.Config().AttemptTimeout, "the default attempt timeout is each claim's: half its interval")
	require.NotEqual(t, c.Config().OwnerID, d.Config().OwnerID, "each client gets its own default owner id")

	// The zero Config is every default, and a working client.
	require.NoError(t, goclient.Config{}.Validate(), "the defaults are valid")
	z, err := goclient.NewClient(pool, goclient.Config{})
	require.NoError(t, err)
	defer z.Close()
	def := z.Config()
	require.Equal(t, goclient.DefaultSafetyMargin, def.SafetyMargin, "the safety margin defaults to 5 s")
	require.Equal(t, 5*time.Second, goclient.DefaultSafetyMargin)
	require.Equal(t, goclient.DefaultMaxInFlightRenewals, def.MaxInFlightRenewals)
	require.Equal(t, 16, def.RenewalPoolSize, "the renewal pool defaults to four times MaxInFlightRenewals")
	// Four times a huge MaxInFlightRenewals would overflow: the pool is then that size.
	require.NoError(t, goclient.Config{MaxInFlightRenewals: math.MaxInt}.Validate())
	require.NoError(t, goclient.Config{MaxInFlightRenewals: 3, RenewalPoolSize: 3}.Validate(), "a pool of MaxInFlightRenewals: a fixed bound")
	require.Equal(t, goclient.DefaultCommitTimeout, def.CommitTimeout)
	require.Zero(t, def.LeaseDuration, "no lease bound by default: the policy decides")
	require.Zero(t, def.RenewalInterval, "no interval bound by default: the policy decides")
	require.Zero(t, def.AttemptTimeout, "the attempt timeout defaults to half of each claim's interval")
	require.Equal(t, goclient.NopObserver{}, def.Observer)
	require.Equal(t, goclient.GoroutineScheduler{}, def.Scheduler)
	require.NotNil(t, def.Logger)
	require.Regexp(t, `^leasefence-[0-9a-f]{16}$`, def.OwnerID)
	for _, bounds := range []goclient.Config{
		{},
		{RenewalInterval: time.Second, SafetyMargin: time.Second},
		{LeaseDuration: time.Second},
	} {
		require.NoError(t, bounds.Validate(), "a bound alone, or none, is checked at each claim")
	}
}

// At claim time each claim's lease (its queue's policy within the client's
// bounds) is checked with the configuration rules; a policy the client cannot
// keep safe is a counted configuration rejection, named by queue, rule and
// both values, and the claims are released, not silently clamped.
func TestClaimOfAPolicyTheClientCannotKeepIsRefusedAndReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		db   policy
		cfg  goclient.Config
		want string
	}{
		// The client keeps a 500 ms margin and 400 ms attempts (shortPolicy's clientConfig).
		"insufficient margin": {policy{lease: time.Second, interval: 330 * time.Millisecond, maxLifetime: time.Hour, renewalEnabled: true},
			goclient.Config{AttemptTimeout: 200 * time.Millisecond},
			`leasefence: the client cannot keep the queue's lease policy safe: queue "etl.orders": renewal interval plus attempt timeout plus safety margin must not exceed the lease duration` +
				` (lease duration 1s in the database, safety margin 500ms in the client)`},
		"attempt timeout": {policy{lease: 2 * time.Second, interval: 300 * time.Millisecond, maxLifetime: time.Hour, renewalEnabled: true}, goclient.Config{},
			`leasefence: the client cannot keep the queue's lease policy safe: queue "etl.orders": attempt timeout must be shorter than the renewal interval` +
				` (renewal interval 300ms in the database, attempt timeout 400ms in the client)`},
		"lease bound": {shortPolicy, goclient.Config{LeaseDuration: 3 * time.Second, RenewalInterval: time.Second},
			`leasefence: the client cannot keep the queue's lease policy safe: queue "etl.orders": lease duration must not be shorter than the client's LeaseDuration` +
				` (lease duration 2s in the database, lease duration 3s in the client)`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, shortPolicy)
			ids := e.enqueue(2)
			e.setPolicy(tc.db)
			rec := newRecorder()
			withRec := tc.cfg
			withRec.Observer = rec
			c := e.worker(withRec)
			_, err := c.ClaimMany(ctx, testQueue, 2)
			require.ErrorIs(t, err, goclient.ErrConfigurationRejected)
			var rej *goclient.ConfigurationRejectedError
			require.True(t, errors.As(err, &rej))
			require.Equal(t, testQueue, rej.Queue)
			require.Equal(t, tc.want, err.Error())
			require.Equal(t, 1, rec.rejected)
			for _, id := range ids {
				s := e.state(id)
				require.Equal(t, goclient.StatusQueued, s.Status, "the claim was released")
				require.Zero(t, s.AttemptNumber)
			}
			_, err = e.worker(tc.cfg).Claim(ctx, testQueue) // the default observer is fine too
			require.ErrorIs(t, err, goclient.ErrConfigurationRejected)
		})
	}
}

// The policy is the truth: a policy changed between two claims (by an
// operator's session while the worker's stays open) is followed by the next
// claim, with no client setting to change; a bound is honoured.
func TestClaimFollowsThePolicyChangedBetweenClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	e.enqueue(3)
	c := e.worker()
	first, err := c.Claim(ctx, testQueue)
	require.NoError(t, err)
	require.Equal(t, shortPolicy.interval, first.RenewalInterval())
	require.Equal(t, shortPolicy.lease, first.LeaseExpiresAt().Sub(first.DatabaseTime()), "granted in database time")

	e.setPolicy(slowPolicy) // the admin session
	second, err := c.Claim(ctx, testQueue)
	require.NoError(t, err)
	require.Equal(t, slowPolicy.interval, second.RenewalInterval())
	require.Equal(t, slowPolicy.lease, second.LeaseExpiresAt().Sub(second.DatabaseTime()))

	// Each lease is kept by its own claim's terms: both are renewed
	// before either trust deadline passes (2 s - 500 ms and 3 s - 500 ms).
	l1, l2 := c.Keep(ctx, first), c.Keep(ctx, second)
	waitFor(t, 10*time.Second, "both claims renewed", func() bool {
		return e.state(first.ID()).RenewalCount >= 1 && e.state(second.ID()).RenewalCount >= 1
	})
	require.NoError(t, l1.Err())
	require.NoError(t, l2.Err())
	l1.Stop()
	l2.Stop()

	// A bound: never renew less often than every 300 ms, whatever the policy.
	bounded := e.worker(goclient.Config{RenewalInterval: 300 * time.Millisecond, AttemptTimeout: 100 * time.Millisecond})
	third, err := bounded.Claim(ctx, testQueue)
	require.NoError(t, err)
	require.Equal(t, 300*time.Millisecond, third.RenewalInterval(), "min(policy 1 s, bound 300 ms)")
	require.Equal(t, slowPolicy.lease, third.LeaseExpiresAt().Sub(third.DatabaseTime()))
}

func TestParsePoolConfigSetsApplicationNameAndStatementTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ctx := context.Background()
	cfg, err := goclient.ParsePoolConfig(e.workerDB, 1500*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, goclient.ApplicationName, cfg.ConnConfig.RuntimeParams["application_name"])
	require.Equal(t, "1500ms", cfg.ConnConfig.RuntimeParams["statement_timeout"])
	cfg, err = goclient.ParsePoolConfig(e.workerDB, time.Microsecond)
	require.NoError(t, err)
	require.Equal(t, "1ms", cfg.ConnConfig.RuntimeParams["statement_timeout"], "rounded up to PostgreSQL's unit")

	pool := e.pool(e.workerDB)
	var app, timeout string
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_setting('application_name'), current_setting('statement_timeout')`).Scan(&app, &timeout))
	require.Equal(t, "leasefence", app)
	require.Equal(t, "30s", timeout, "DefaultStatementTimeout")

	_, err = goclient.ParsePoolConfig("postgres://bad url:x", 0)
	require.Error(t, err)
	_, err = goclient.NewPool(ctx, "postgres://bad url:x", 0)
	require.Error(t, err)
}
