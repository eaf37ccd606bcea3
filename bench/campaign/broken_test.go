package campaign

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// breakFunction returns a Mutate that reads fn's definition from the
// database (the bundle just applied), applies edit to it, checks that the
// edit changed something, and installs the result with CREATE OR REPLACE
// (which keeps the function's owner and grants).
func breakFunction(fn string, edit func(string) string) func(context.Context, *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		var def string
		if err := conn.QueryRow(ctx, `SELECT pg_get_functiondef($1::regprocedure)`, fn).Scan(&def); err != nil {
			return err
		}
		broken := edit(def)
		if broken == def {
			return fmt.Errorf("the edit of %s changed nothing: the bundle's body no longer has the predicate this test removes", fn)
		}
		_, err := conn.Exec(ctx, broken)
		return err
	}
}

// dropLines removes every line matching re.
func dropLines(re string) func(string) string {
	r := regexp.MustCompile(`(?m)^` + re + `\n`)
	return func(s string) string { return r.ReplaceAllString(s, "") }
}

// TestCheckerCatchesBrokenBundles applies the bundle, replaces one function
// with a broken body, runs a small campaign with the faults that exercise
// it, and requires the checker to report the specific violation.
func TestCheckerCatchesBrokenBundles(t *testing.T) {
	cases := []struct {
		name   string
		fn     string
		edit   func(string) string
		faults []string
		want   string
	}{
		{
			name:   "renewal without the token predicate",
			fn:     "durable_jobs.renew_job_lease(bigint,uuid,text)",
			edit:   dropLines(`\s*AND jq?\.lease_claim_digest = .*`),
			faults: []string{FaultForged},
			want:   VForgedRenewalAccepted,
		},
		{
			name:   "completion without the expiry predicate",
			fn:     "durable_jobs.lock_fenced_claim(bigint,uuid,text)",
			edit:   dropLines(`\s*AND j\.lease_expires_at > pg_catalog\.clock_timestamp\(\)`),
			faults: []string{FaultZombie},
			want:   VExpiredWriteAccepted,
		},
		{
			name: "claim that ignores expiry",
			fn:   "durable_jobs.claim_next_jobs(text,text,integer)",
			edit: func(s string) string {
				// Both guards of the reclaim probe: the indexed floor and the expiry.
				return strings.NewReplacer("j.lease_expiry_floor <= v_now", "true", "j.lease_expires_at <= v_now", "true").Replace(s)
			},
			faults: []string{FaultEarlyReclaim},
			want:   VOverlappingClaims,
		},
		{
			name: "claim that does not skip locked rows",
			fn:   "durable_jobs.claim_next_jobs(text,text,integer)",
			edit: func(s string) string {
				return strings.ReplaceAll(s, " SKIP LOCKED", "")
			},
			faults: []string{FaultRowLock},
			want:   VClaimWaitedOnLock,
		},
		{
			// The generation floor (migration 011, in claim_next_jobs since
			// 017) gone: the claim raises the generation by one only, so
			// after the asynchronous promotion the job lost there is
			// claimed at generation 1 again.
			name: "generation that ignores the promotion",
			fn:   "durable_jobs.claim_next_jobs(text,text,integer)",
			edit: func(s string) string {
				return strings.Replace(s, "GREATEST(j.lease_fencing_generation + 1, v_floor)", "j.lease_fencing_generation + 1", 1)
			},
			faults: []string{FaultFailover, FaultFailoverAsync},
			want:   VDuplicateGeneration,
		},
	}
	bin := worker(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			mutate := breakFunction(c.fn, c.edit)
			res, err := Run(ctx, Config{Seed: uint64(100 + i), Ops: 80, MaxDuration: 30 * time.Second,
				Workers: 2, Faults: c.faults, WorkerBinary: bin, Mutate: mutate})
			if err != nil {
				t.Fatal(err)
			}
			kinds := res.ViolationKinds()
			t.Logf("%d operations, violations found: %v", res.Ops, kinds)
			for _, v := range res.Violations {
				if v.Kind == c.want {
					t.Logf("caught:\n%s", v.Report(res.Seed))
					return
				}
			}
			t.Fatalf("the checker did not report %s for a %s (found %v)", c.want, c.name, kinds)
		})
	}
}
