package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

var policyUsage = help("policy")

// runPolicy is "leasectl policy".
func runPolicy(ctx context.Context, env *cliEnv, args []string) int {
	name, rest, done, code := readAction(env, "policy", policyUsage, args, "show", "set")
	if done {
		return code
	}
	if name == "show" {
		return policyShow(ctx, env, rest)
	}
	return policySet(ctx, env, rest)
}

// policyJSON is one policy in JSON output.
type policyJSON struct {
	Queue                   string  `json:"queue"`
	LeaseDurationSeconds    float64 `json:"lease_duration_seconds"`
	RenewalIntervalSeconds  float64 `json:"renewal_interval_seconds"`
	MaxClaimLifetimeSeconds float64 `json:"max_claim_lifetime_seconds"`
	RenewalEnabled          bool    `json:"renewal_enabled"`
	ChangedAt               string  `json:"changed_at"`
	ChangedByRole           string  `json:"changed_by_role"`
}

func toPolicyJSON(p goclient.LeasePolicy) policyJSON {
	return policyJSON{p.Queue, seconds(p.LeaseDuration), seconds(p.RenewalInterval), seconds(p.MaxClaimLifetime),
		p.RenewalEnabled, textfmt.Time(p.ChangedAt), p.ChangedByRole}
}

// printPolicies prints policies as a table or JSON.
func printPolicies(env *cliEnv, asJSON bool, policies []goclient.LeasePolicy) {
	if asJSON {
		out := make([]policyJSON, 0, len(policies))
		for _, p := range policies {
			out = append(out, toPolicyJSON(p))
		}
		_ = writeJSON(env.stdout, out)
		return
	}
	tw := newTable(env.stdout)
	printf(tw, "QUEUE\tLEASE\tRENEWAL INTERVAL\tMAX CLAIM LIFETIME\tRENEWAL ENABLED\tCHANGED AT\tCHANGED BY\n")
	for _, p := range policies {
		printf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Queue, textfmt.Duration(p.LeaseDuration),
			textfmt.Duration(p.RenewalInterval), textfmt.Duration(p.MaxClaimLifetime), formatBool(p.RenewalEnabled),
			textfmt.Time(p.ChangedAt), p.ChangedByRole)
	}
	_ = tw.Flush()
}

func policyShow(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("policy show")
	common := addCommonFlags(fs, true)
	if done, code := parseFlags(env, fs, policyUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("policy show: %s", err)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	policies, err := s.admin.QueueLeasePolicies(ctx)
	if err != nil {
		return env.fail("read lease policies", err)
	}
	printPolicies(env, common.json(), policies)
	return exitOK
}

func policySet(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("policy set")
	common := addCommonFlags(fs, true)
	queue := fs.String("queue", "", "queue name, or '*' for the default policy (required)")
	reason := fs.String("reason", "", "why the policy changes; kept in the control evidence (required)")
	// Left out, each setting keeps the queue's current value (see policySet).
	lease := fs.Duration("lease-duration", 0, "lease granted by each claim and renewal, e.g. 30s")
	interval := fs.Duration("renewal-interval", 0, "how often workers renew, at most a third of the lease, e.g. 10s")
	lifetime := fs.Duration("max-claim-lifetime", 0, "longest time renewals may keep one claim, e.g. 24h")
	enabled := fs.Bool("renewal-enabled", false, "whether workers may renew leases on this queue (=true or =false)")
	record := addChangeRecordFlags(fs)
	proposeOnly := fs.Bool("propose", false, "propose the change for another operator to approve (maker-checker) instead of making it")
	if done, code := parseFlags(env, fs, policyUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("policy set: %s", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["queue"] {
		return env.usageError("policy set: --queue is required")
	}
	if !given["reason"] {
		return env.usageError("policy set: --reason is required")
	}

	// A setting left out is nil: the database keeps the queue's current
	// value, read inside the change under its lock (never read here first,
	// which would overwrite a change committed in between).
	update := goclient.LeasePolicyUpdate{Queue: *queue, Reason: *reason, Ticket: *record.ticket, Approver: *record.approver,
		LeaseDuration: ifGiven(given, "lease-duration", lease), RenewalInterval: ifGiven(given, "renewal-interval", interval),
		MaxClaimLifetime: ifGiven(given, "max-claim-lifetime", lifetime), RenewalEnabled: ifGiven(given, "renewal-enabled", enabled)}

	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	if *proposeOnly {
		values := map[string]any{}
		for flagName, d := range map[string]*time.Duration{"lease-duration": update.LeaseDuration,
			"renewal-interval": update.RenewalInterval, "max-claim-lifetime": update.MaxClaimLifetime} {
			if d != nil {
				values[strings.ReplaceAll(flagName, "-", "_")] = intervalText(*d)
			}
		}
		if update.RenewalEnabled != nil {
			values["renewal_enabled"] = *update.RenewalEnabled
		}
		return propose(ctx, env, s, "lease_policy", *queue, values, *reason, *record.ticket)
	}
	updated, err := s.admin.UpdateQueueLeasePolicy(ctx, update)
	if err != nil {
		return env.fail(fmt.Sprintf("set lease policy of queue %s", strconv.Quote(*queue)), err)
	}
	if common.json() {
		printPolicies(env, true, []goclient.LeasePolicy{updated})
		return exitOK
	}
	printf(env.stdout, "lease policy of queue %s set: lease %s, renewal interval %s, max claim lifetime %s, renewal enabled %s\n",
		*queue, textfmt.Duration(updated.LeaseDuration), textfmt.Duration(updated.RenewalInterval),
		textfmt.Duration(updated.MaxClaimLifetime), formatBool(updated.RenewalEnabled))
	return exitOK
}

// ifGiven is p when the flag name was given, else nil: an update's "keep
// the current value".
func ifGiven[T any](given map[string]bool, name string, p *T) *T {
	if given[name] {
		return p
	}
	return nil
}

// valueOr is *p, or def when p is nil.
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
