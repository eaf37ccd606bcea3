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

// Requirement 10: unsafe settings are refused at construction with exact
// messages: zero, negative, equal-to-lease and insufficient-margin
// intervals, and attempt timeouts that do not fit inside the interval.
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
		"zero interval":         {with(func(c *goclient.Config) { c.RenewalInterval = 0 }), "RenewalInterval", goclient.MsgIntervalNotPositive},
		"negative interval":     {with(func(c *goclient.Config) { c.RenewalInterval = -time.Second }), "RenewalInterval", goclient.MsgIntervalNotPositive},
		"interval equal lease":  {with(func(c *goclient.Config) { c.RenewalInterval = 3 * time.Second }), "RenewalInterval", goclient.MsgIntervalNotShorter},
		"interval beyond lease": {with(func(c *goclient.Config) { c.RenewalInterval = 4 * time.Second }), "RenewalInterval", goclient.MsgIntervalNotShorter},
		"insufficient margin": {with(func(c *goclient.Config) { c.RenewalInterval, c.SafetyMargin = 2*time.Second, 600*time.Millisecond }),
			"RenewalInterval", goclient.MsgInsufficientMargin},
		// The sum of the three durations wraps around: once it passed as a
		// negative sum, well under the lease.
		"margin overflows sum": {with(func(c *goclient.Config) { c.SafetyMargin = math.MaxInt64 }),
			"RenewalInterval", goclient.MsgInsufficientMargin},
		"interval and margin overflow sum": {with(func(c *goclient.Config) {
			c.LeaseDuration, c.RenewalInterval, c.AttemptTimeout, c.SafetyMargin = math.MaxInt64, math.MaxInt64-2, 1, 3
		}), "RenewalInterval", goclient.MsgInsufficientMargin},
		"zero lease":         {with(func(c *goclient.Config) { c.LeaseDuration = 0 }), "LeaseDuration", goclient.MsgLeaseNotPositive},
		"negative lease":     {with(func(c *goclient.Config) { c.LeaseDuration = -time.Second }), "LeaseDuration", goclient.MsgLeaseNotPositive},
		"zero margin":        {with(func(c *goclient.Config) { c.SafetyMargin = 0 }), "SafetyMargin", goclient.MsgMarginNotPositive},
		"negative margin":    {with(func(c *goclient.Config) { c.SafetyMargin = -time.Second }), "SafetyMargin", goclient.MsgMarginNotPositive},
		"attempt negative":   {with(func(c *goclient.Config) { c.AttemptTimeout = -time.Second }), "AttemptTimeout", goclient.MsgAttemptTimeoutNegative},
		"attempt = interval": {with(func(c *goclient.Config) { c.AttemptTimeout = time.Second }), "AttemptTimeout", goclient.MsgAttemptTimeoutTooLong},
		"in-flight negative": {with(func(c *goclient.Config) { c.MaxInFlightRenewals = -1 }), "MaxInFlightRenewals", goclient.MsgMaxInFlightNegative},
		"owner malformed":    {with(func(c *goclient.Config) { c.OwnerID = "worker one" }), "OwnerID", goclient.MsgOwnerIDFormat},
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
	require.Equal(t, goclient.MsgNilPool, ce.Message)

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
	require.Regexp(t, `^leasefence-[0-9a-f]{16}$`, c.OwnerID())
	require.Equal(t, got.OwnerID, c.OwnerID())

	d, err := goclient.New(pool, goclient.WithLease(3*time.Second, time.Second), goclient.WithSafetyMargin(time.Second))
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, time.Second/2, d.Config().AttemptTimeout, "the default attempt timeout is half the interval")
	require.NotEqual(t, c.OwnerID(), d.OwnerID(), "each client gets its own default owner id")
	def := goclient.DefaultConfig()
	require.NoError(t, def.Validate(), "the defaults match the bundle's default policy and are valid")
}

// At claim time the database's policy is checked against the client's
// settings; a mismatch is a counted configuration rejection and the claims
// are released, not silently clamped.
func TestClaimWithMismatchedPolicyIsRejectedAndReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		db      policy
		setting string
	}{
		"renewal interval": {policy{lease: 2 * time.Second, interval: 600 * time.Millisecond, maxLifetime: time.Hour, renewalEnabled: true}, "renewal interval"},
		"lease duration":   {policy{lease: 3 * time.Second, interval: 500 * time.Millisecond, maxLifetime: time.Hour, renewalEnabled: true}, "lease duration"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, shortPolicy)
			ids := e.enqueue(2)
			e.setPolicy(tc.db)
			rec := newRecorder()
			c := e.worker(goclient.WithObserver(rec)) // configured for shortPolicy
			_, err := c.ClaimMany(ctx, testQueue, 2)
			require.ErrorIs(t, err, goclient.ErrConfigurationRejected)
			var rej *goclient.ConfigurationRejectedError
			require.True(t, errors.As(err, &rej))
			require.Equal(t, tc.setting, rej.Setting)
			require.Equal(t, testQueue, rej.Queue)
			require.Contains(t, err.Error(), tc.setting)
			require.Equal(t, 1, rec.rejected)
			for _, id := range ids {
				s := e.state(id)
				require.Equal(t, goclient.StatusQueued, s.Status, "the claim was released")
				require.Zero(t, s.AttemptNumber)
			}
			_, err = e.worker().Claim(ctx, testQueue) // the default observer is fine too
			require.ErrorIs(t, err, goclient.ErrConfigurationRejected)
		})
	}
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
