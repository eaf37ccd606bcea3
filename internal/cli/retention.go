package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

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

// daysFlag adds a flag that holds a period, read as textfmt.ParseDays
// reads it ("30d", "12h").
func daysFlag(fs *flag.FlagSet, name, usage string) *time.Duration {
	d := new(time.Duration)
	fs.Func(name, usage, func(s string) (err error) {
		*d, err = textfmt.ParseDays(s)
		return err
	})
	return d
}

// readRetentionPolicies reads every queue's retention policy as leasectl
// prints it; it takes the Admin first, as a method expression does, for get.
func readRetentionPolicies(a *goclient.Admin, ctx context.Context) ([]retentionPolicy, error) {
	policies, err := a.RetentionPolicies(ctx)
	out := make([]retentionPolicy, len(policies))
	for i, p := range policies {
		out[i] = retentionPolicy{Queue: p.Queue, PayloadRetention: cmp.Or(p.PayloadRetentionText, textfmt.Days(p.PayloadRetention)),
			RecordRetention: cmp.Or(p.RecordRetentionText, textfmt.Days(p.RecordRetention)),
			PayloadSeconds:  p.PayloadRetention.Seconds(), RecordSeconds: p.RecordRetention.Seconds(),
			ChangedAtText: textfmt.Time(p.ChangedAt), ChangedByRole: p.ChangedByRole}
	}
	return out, err
}

// printRetentionPolicies prints policies as a table or JSON.
func (c *call) printRetentionPolicies(policies []retentionPolicy) error {
	return c.print(policies, func() {
		table(c.env.stdout, "QUEUE\tPAYLOAD RETENTION\tRECORD RETENTION\tCHANGED AT\tCHANGED BY", policies,
			func(p retentionPolicy) []any {
				return []any{p.Queue, p.PayloadRetention, p.RecordRetention, p.ChangedAtText, p.ChangedByRole}
			})
	})
}

// retentionShow is "leasectl retention show".
var retentionShow = &action{name: "retention show", output: true, run: func(c *call) error {
	policies, err := get(c, "read retention policies", readRetentionPolicies)
	if err != nil {
		return err
	}
	return c.printRetentionPolicies(policies)
}}

// retentionSet is "leasectl retention set".
var retentionSet = &action{name: "retention set", output: true,
	required: []string{"queue", "payload-retention", "record-retention", "reason"}, flags: func(fs *flag.FlagSet) runFunc {
		queue := fs.String("queue", "", "queue name, or '*' for the default policy (required)")
		change := addChangeFlags(fs, "why the policy changes; kept in the control evidence (required)")
		proposeOnly := fs.Bool("propose", false, proposeUsage)
		payload := daysFlag(fs, "payload-retention", "how long a finished job keeps its payload, e.g. 30d (required)")
		record := daysFlag(fs, "record-retention", "how long a finished job's row and outcome ledger are kept, e.g. 365d (required)")
		return func(c *call) error {
			if err := change.checkPersonal(); err != nil {
				return err
			}
			if *proposeOnly {
				return c.propose("retention_policy", func(a *goclient.Admin) (int64, error) {
					return a.ProposeRetentionPolicy(c.ctx, *queue, *payload, *record, change.record())
				})
			}
			a, err := c.openAdmin()
			if err != nil {
				return err
			}
			if err := a.SetRetentionPolicy(c.ctx, *queue, *payload, *record, change.record()); err != nil {
				return failed(fmt.Sprintf("set retention policy of queue %s", strconv.Quote(*queue)), err)
			}
			if !c.json {
				c.printf("retention policy of queue %s set: payload %s, record %s\n",
					*queue, textfmt.Days(*payload), textfmt.Days(*record))
				return nil
			}
			policies, err := get(c, "read retention policies", readRetentionPolicies)
			if err != nil {
				return err
			}
			updated := []retentionPolicy{}
			for _, p := range policies {
				if p.Queue == *queue {
					updated = append(updated, p)
				}
			}
			return c.printRetentionPolicies(updated)
		}
	}}

// retentionApply is "leasectl retention apply".
var retentionApply = &action{name: "retention apply", output: true, flags: func(fs *flag.FlagSet) runFunc {
	batch := fs.Int("batch-size", 1000, "jobs per batch (1 to 10000); each batch is one short transaction")
	return func(c *call) error {
		if *batch < 1 || *batch > 10000 {
			return usagef("--batch-size must be 1 to 10000, not %d", *batch)
		}
		a, err := c.openAdmin()
		if err != nil {
			return err
		}
		report, err := a.PurgeAllExpired(c.ctx, *batch)
		if err != nil {
			return failed(fmt.Sprintf("purge batch %d", report.Batches+1), err)
		}
		return c.print(report, func() {
			if len(report.Purged) == 0 {
				c.printf("nothing to purge (%d batch)\n", report.Batches)
				return
			}
			table(c.env.stdout, "QUEUE\tKIND\tPURGED", report.Purged, func(p goclient.PurgeTotal) []any {
				return []any{p.Queue, p.Kind, p.Count}
			})
			c.printf("purged in %d batches\n", report.Batches)
		})
	}
}}
