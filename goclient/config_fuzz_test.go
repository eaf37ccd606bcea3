package goclient_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/goclient"
)

// fuzzDurationBound keeps the fuzzed durations below 2^61 ns (about 73
// years) each, so that the sum the safety-margin rule checks cannot
// overflow int64. (Past that bound Validate's sum wraps around: see
// docs/reliability.md, "Findings".)
const fuzzDurationBound = time.Duration(1) << 61

// FuzzClientConfig builds clients from arbitrary settings through the
// exported constructors (Config.Validate, NewClient,
// NewWorker, ParsePoolConfig). None may panic; every configuration they
// accept satisfies the documented safety rules in exact arithmetic, and
// every one they refuse is a *ConfigError.
func FuzzClientConfig(f *testing.F) {
	f.Add(int64(30e9), int64(10e9), int64(5e9), int64(0), 0, "worker-1", 1, int64(0), int64(0), "postgres://127.0.0.1:1/x")
	f.Add(int64(2e9), int64(5e8), int64(5e8), int64(4e8), 4, "", 0, int64(-1), int64(0), "host=127.0.0.1 port=1")
	f.Add(int64(0), int64(0), int64(0), int64(0), -1, "bad owner", -1, int64(0), int64(-1), "::not a url")
	f.Add(int64(3e9), int64(3e9), int64(1e9), int64(0), 0, "w", 2, int64(1), int64(1), "postgres://")
	f.Add(int64(3e9), int64(2e9), int64(6e8), int64(0), 0, "w", 2, int64(1), int64(1), "postgres://[::1")
	f.Add(int64(3e9), int64(1e9), int64(1e9), int64(1e9), 0, "w", 2, int64(1), int64(1), "")
	f.Fuzz(func(t *testing.T, lease, interval, margin, attempt int64, inFlight int, owner string,
		concurrency int, poll, shutdown int64, conn string) {
		for _, d := range []int64{lease, interval, margin, attempt} {
			if d > int64(fuzzDurationBound) || d < -int64(fuzzDurationBound) {
				return
			}
		}
		cfg := goclient.Config{OwnerID: owner, LeaseDuration: time.Duration(lease), RenewalInterval: time.Duration(interval),
			SafetyMargin: time.Duration(margin), AttemptTimeout: time.Duration(attempt), MaxInFlightRenewals: inFlight}
		verr := cfg.Validate()

		// The rules, in exact arithmetic, after the documented defaults. A
		// zero lease or interval is no bound (each claim's policy decides,
		// and is checked by the same rules at the claim); the duration rules
		// apply to the bounds that are set.
		if margin == 0 {
			margin = int64(goclient.DefaultSafetyMargin)
		}
		safe := lease >= 0 && interval >= 0 && margin > 0 && attempt >= 0 && inFlight >= 0
		if interval > 0 && attempt >= interval {
			safe = false
		}
		if lease > 0 && interval > 0 {
			at := attempt
			if at == 0 {
				at = interval / 2
			}
			sum := new(big.Int).Add(big.NewInt(interval), big.NewInt(at))
			sum.Add(sum, big.NewInt(margin))
			safe = safe && interval < lease && at < interval && sum.Cmp(big.NewInt(lease)) <= 0
		}
		if verr == nil && !safe {
			t.Fatalf("Validate accepted an unsafe configuration: lease %d, interval %d, margin %d, attempt %d, in-flight %d",
				lease, interval, margin, attempt, inFlight)
		}
		if verr != nil {
			var ce *goclient.ConfigError
			if !errors.As(verr, &ce) || !errors.Is(verr, goclient.ErrInvalidConfig) || ce.Message == "" {
				t.Fatalf("Validate refused with %T %v, not a *ConfigError", verr, verr)
			}
		}

		// ParsePoolConfig on arbitrary text: an error or a configuration
		// carrying the documented application_name and statement_timeout.
		pcfg, perr := goclient.ParsePoolConfig(conn, time.Duration(poll))
		if perr == nil {
			if pcfg.ConnConfig.RuntimeParams["application_name"] != goclient.ApplicationName ||
				pcfg.ConnConfig.RuntimeParams["statement_timeout"] == "" {
				t.Fatalf("ParsePoolConfig lost its settings: %v", pcfg.ConnConfig.RuntimeParams)
			}
		}

		// NewClient agrees with Validate; NewClient opens no
		// connection (the pool points at a closed port).
		pc, err := pgxpool.ParseConfig("postgres://fuzz@127.0.0.1:1/fuzz?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		c, cerr := goclient.NewClient(pool, cfg)
		if (cerr == nil) != (verr == nil) {
			t.Fatalf("NewClient (%v) and Validate (%v) disagree", cerr, verr)
		}
		if c == nil {
			return
		}
		defer c.Close()
		w, werr := c.NewWorker(goclient.WorkerConfig{Queue: "fuzz.q", Concurrency: concurrency,
			Handler:      func(context.Context, goclient.Job) error { return nil },
			PollInterval: time.Duration(poll), ShutdownTimeout: time.Duration(shutdown)})
		wantErr := concurrency < 0 || poll < 0 || shutdown < 0
		if (werr != nil) != wantErr || (w == nil) == (werr == nil) {
			t.Fatalf("NewWorker(concurrency %d, poll %d, shutdown %d) = %v, %v", concurrency, poll, shutdown, w != nil, werr)
		}
	})
}
