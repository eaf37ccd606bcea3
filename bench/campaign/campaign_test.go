package campaign

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

var (
	workerOnce sync.Once
	workerBin  string
	workerErr  error
	workerDir  string
)

// worker builds the worker program once per test binary.
func worker(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		workerDir, workerErr = os.MkdirTemp("", "campaign-bin-")
		if workerErr == nil {
			workerBin, workerErr = BuildWorker(context.Background(), workerDir)
		}
	})
	if workerErr != nil {
		t.Fatalf("build the campaign worker (needs the go tool on PATH): %v", workerErr)
	}
	return workerBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if workerDir != "" {
		_ = os.RemoveAll(workerDir)
	}
	os.Exit(code)
}

// envInt reads an integer override for local runs.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCampaign is the bounded campaign: every fault kind at least once, a
// few thousand checked operations against the bundle as it stands, no
// violation.
func TestCampaign(t *testing.T) {
	seed := uint64(envInt("CAMPAIGN_SEED", 20261203))
	ops := envInt("CAMPAIGN_OPS", 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The time bound leaves room for a loaded machine; the run normally
	// reaches ops in about 80 s.
	res, err := Run(ctx, Config{Seed: seed, Ops: ops, MaxDuration: 150 * time.Second,
		WorkerBinary: worker(t), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("campaign: %d operations checked, %d fault kinds %v, %d violations, claims lost in promotions %v, seed %d, %s",
		res.Ops, res.FaultKinds(), res.Faults, len(res.Violations), res.LostClaims, res.Seed, res.Duration.Round(time.Second))
	for _, v := range res.Violations {
		t.Error(v.Report(res.Seed))
	}
	for _, kind := range append([]string{FaultClockSkew}, AllFaults...) {
		if res.Faults[kind] == 0 {
			t.Errorf("fault kind %s never ran", kind)
		}
	}
	if minOps := min(ops, 2000); res.Ops < minOps {
		t.Errorf("only %d operations checked, want at least %d", res.Ops, minOps)
	}
}
