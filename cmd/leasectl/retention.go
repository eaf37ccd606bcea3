package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

var retentionUsage = help("retention")

// runRetention is "leasectl retention".
func runRetention(ctx context.Context, env *cliEnv, args []string) int {
	name, rest, done, code := readAction(env, "retention", retentionUsage, args, "show", "set", "apply")
	if done {
		return code
	}
	switch name {
	case "show":
		return retentionShow(ctx, env, rest)
	case "set":
		return retentionSet(ctx, env, rest)
	}
	return retentionApply(ctx, env, rest)
}

// retentionPolicy is one row of queue_retention_policies.
type retentionPolicy struct {
	Queue            string  `json:"queue"`
	PayloadRetention string  `json:"payload_retention"`
	RecordRetention  string  `json:"record_retention"`
	PayloadSeconds   float64 `json:"payload_retention_seconds"`
	RecordSeconds    float64 `json:"record_retention_seconds"`
	ChangedAtText    string  `json:"changed_at"`
	ChangedByRole    string  `json:"changed_by_role"`
}

// formatRetention prints a retention period: whole days as "30d", anything
// else the way textfmt.Duration does.
func formatRetention(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return textfmt.Duration(d)
}

// parseRetention reads a retention flag: "30d" (whole days) or a Go
// duration such as "12h" or "90m".
func parseRetention(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q (write whole days like 30d, or 12h, 90m)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (write whole days like 30d, or 12h, 90m)", s)
	}
	return d, nil
}

// retentionFlag is a flag.Value holding a retention period.
type retentionFlag struct {
	d   time.Duration
	set bool
}

// String prints the period.
func (f *retentionFlag) String() string { return formatRetention(f.d) }

// Set parses the period.
func (f *retentionFlag) Set(s string) error {
	d, err := parseRetention(s)
	if err != nil {
		return err
	}
	f.d, f.set = d, true
	return nil
}

// intervalText is a duration as PostgreSQL interval input, exact to the
// microsecond.
func intervalText(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}

// readRetentionPolicies reads every queue's retention policy.
func readRetentionPolicies(ctx context.Context, s *session) ([]retentionPolicy, error) {
	policies, err := s.admin.RetentionPolicies(ctx)
	out := make([]retentionPolicy, len(policies))
	for i, p := range policies {
		out[i] = retentionPolicy{Queue: p.Queue, PayloadRetention: cmp.Or(p.PayloadRetentionText, formatRetention(p.PayloadRetention)),
			RecordRetention: cmp.Or(p.RecordRetentionText, formatRetention(p.RecordRetention)),
			PayloadSeconds:  seconds(p.PayloadRetention), RecordSeconds: seconds(p.RecordRetention),
			ChangedAtText: textfmt.Time(p.ChangedAt), ChangedByRole: p.ChangedByRole}
	}
	return out, err
}

// printRetentionPolicies prints policies as a table or JSON.
func printRetentionPolicies(env *cliEnv, asJSON bool, policies []retentionPolicy) {
	if asJSON {
		_ = writeJSON(env.stdout, policies)
		return
	}
	tw := newTable(env.stdout)
	printf(tw, "QUEUE\tPAYLOAD RETENTION\tRECORD RETENTION\tCHANGED AT\tCHANGED BY\n")
	for _, p := range policies {
		printf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Queue, p.PayloadRetention, p.RecordRetention, p.ChangedAtText, p.ChangedByRole)
	}
	_ = tw.Flush()
}

func retentionShow(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("retention show")
	common := addCommonFlags(fs, true)
	if done, code := parseFlags(env, fs, retentionUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("retention show: %s", err)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	policies, err := readRetentionPolicies(ctx, s)
	if err != nil {
		return env.fail("read retention policies", err)
	}
	printRetentionPolicies(env, common.json(), policies)
	return exitOK
}

func retentionSet(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("retention set")
	common := addCommonFlags(fs, true)
	queue := fs.String("queue", "", "queue name, or '*' for the default policy (required)")
	reason := fs.String("reason", "", "why the policy changes; kept in the control evidence (required)")
	record := addChangeRecordFlags(fs)
	proposeOnly := fs.Bool("propose", false, "propose the change for another operator to approve (maker-checker) instead of making it")
	var payload, recordRetention retentionFlag
	fs.Var(&payload, "payload-retention", "how long a finished job keeps its payload, e.g. 30d (required)")
	fs.Var(&recordRetention, "record-retention", "how long a finished job's row and outcome ledger are kept, e.g. 365d (required)")
	if done, code := parseFlags(env, fs, retentionUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("retention set: %s", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range []string{"queue", "payload-retention", "record-retention", "reason"} {
		if !given[name] {
			return env.usageError("retention set: --%s is required", name)
		}
	}
	// Refused here first, with exit 2, also against a database older than
	// migration 014, which checked this reason for control characters only
	// (set_queue_retention_policy refuses it with LF002 since).
	if looksPersonalOrSecret(*reason) {
		return env.usageError("retention set: --reason %s", personalReasonProblem)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	if *proposeOnly {
		return propose(ctx, env, s, "retention_policy", *queue, map[string]any{
			"payload_retention": intervalText(payload.d), "record_retention": intervalText(recordRetention.d)}, *reason, *record.ticket)
	}
	if err := s.admin.SetRetentionPolicy(ctx, *queue, payload.d, recordRetention.d,
		record.change(*reason)); err != nil {
		return env.fail(fmt.Sprintf("set retention policy of queue %s", strconv.Quote(*queue)), err)
	}
	if common.json() {
		policies, err := readRetentionPolicies(ctx, s)
		if err != nil {
			return env.fail("read retention policies", err)
		}
		updated := []retentionPolicy{}
		for _, p := range policies {
			if p.Queue == *queue {
				updated = append(updated, p)
			}
		}
		printRetentionPolicies(env, true, updated)
		return exitOK
	}
	printf(env.stdout, "retention policy of queue %s set: payload %s, record %s\n",
		*queue, formatRetention(payload.d), formatRetention(recordRetention.d))
	return exitOK
}

// purgeReport is the JSON output of retention apply.
type purgeReport struct {
	Batches int                   `json:"batches"`
	Purged  []goclient.PurgeTotal `json:"purged"`
}

func retentionApply(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("retention apply")
	common := addCommonFlags(fs, true)
	batch := fs.Int("batch-size", 1000, "jobs per batch (1 to 10000); each batch is one short transaction")
	if done, code := parseFlags(env, fs, retentionUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("retention apply: %s", err)
	}
	if *batch < 1 || *batch > 10000 {
		return env.usageError("retention apply: --batch-size must be 1 to 10000, not %d", *batch)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	totals := map[[2]string]int64{}
	report := purgeReport{Purged: []goclient.PurgeTotal{}}
	for {
		got, err := s.admin.PurgeExpired(ctx, *batch)
		if err != nil {
			return env.fail(fmt.Sprintf("purge batch %d", report.Batches+1), err)
		}
		report.Batches++
		if len(got) == 0 {
			break
		}
		for _, r := range got {
			totals[[2]string{r.Queue, r.Kind}] += r.Count
		}
	}
	for k, v := range totals {
		report.Purged = append(report.Purged, goclient.PurgeTotal{Queue: k[0], Kind: k[1], Count: v})
	}
	sort.Slice(report.Purged, func(i, j int) bool {
		a, b := report.Purged[i], report.Purged[j]
		return a.Queue < b.Queue || (a.Queue == b.Queue && a.Kind < b.Kind)
	})
	if common.json() {
		_ = writeJSON(env.stdout, report)
		return exitOK
	}
	if len(report.Purged) == 0 {
		printf(env.stdout, "nothing to purge (%d batch)\n", report.Batches)
		return exitOK
	}
	tw := newTable(env.stdout)
	printf(tw, "QUEUE\tKIND\tPURGED\n")
	for _, p := range report.Purged {
		printf(tw, "%s\t%s\t%d\n", p.Queue, p.Kind, p.Count)
	}
	_ = tw.Flush()
	printf(env.stdout, "purged in %d batches\n", report.Batches)
	return exitOK
}
