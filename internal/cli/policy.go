package cli

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

// printPolicies prints policies as a table or as JSON, in the shape the
// evidence report holds them (evidence.PolicyOf).
func (c *call) printPolicies(policies []goclient.LeasePolicy) error {
	out := make([]evidence.Policy, 0, len(policies))
	for _, p := range policies {
		out = append(out, evidence.PolicyOf(p))
	}
	return c.print(out, func() {
		table(c.env.stdout, "QUEUE\tLEASE\tRENEWAL INTERVAL\tMAX CLAIM LIFETIME\tRENEWAL ENABLED\tCHANGED AT\tCHANGED BY",
			policies, func(p goclient.LeasePolicy) []any {
				return []any{p.Queue, textfmt.Duration(p.LeaseDuration), textfmt.Duration(p.RenewalInterval),
					textfmt.Duration(p.MaxClaimLifetime), formatBool(p.RenewalEnabled), textfmt.Time(p.ChangedAt), p.ChangedByRole}
			})
	})
}

// policyShow is "leasectl policy show".
var policyShow = &action{name: "policy show", output: true, run: func(c *call) error {
	policies, err := get(c, "read lease policies", (*goclient.Admin).QueueLeasePolicies)
	if err != nil {
		return err
	}
	return c.printPolicies(policies)
}}

// policySet is "leasectl policy set".
var policySet = &action{name: "policy set", output: true, required: []string{"queue", "reason"}, flags: func(fs *flag.FlagSet) runFunc {
	queue := fs.String("queue", "", "queue name, or '*' for the default policy (required)")
	change := addChangeFlags(fs, "why the policy changes; kept in the control evidence (required)")
	// Left out, each setting keeps the queue's current value.
	lease := fs.Duration("lease-duration", 0, "lease granted by each claim and renewal, e.g. 30s")
	interval := fs.Duration("renewal-interval", 0, "how often workers renew, at most a third of the lease, e.g. 10s")
	lifetime := fs.Duration("max-claim-lifetime", 0, "longest time renewals may keep one claim, e.g. 24h")
	enabled := fs.Bool("renewal-enabled", false, "whether workers may renew leases on this queue (=true or =false)")
	proposeOnly := fs.Bool("propose", false, proposeUsage)
	return func(c *call) error {
		// A setting left out is nil: the database keeps the queue's current
		// value, read inside the change under its lock (never read here
		// first, which would overwrite a change committed in between).
		update := goclient.LeasePolicyUpdate{Queue: *queue, Reason: change.reason, Ticket: change.ticket,
			Approver: change.approver, LeaseDuration: ifGiven(c, "lease-duration", lease),
			RenewalInterval: ifGiven(c, "renewal-interval", interval), MaxClaimLifetime: ifGiven(c, "max-claim-lifetime", lifetime),
			RenewalEnabled: ifGiven(c, "renewal-enabled", enabled)}
		if *proposeOnly {
			return c.propose("lease_policy", func(a *goclient.Admin) (int64, error) { return a.ProposeLeasePolicy(c.ctx, update) })
		}
		a, err := c.openAdmin()
		if err != nil {
			return err
		}
		updated, err := a.UpdateQueueLeasePolicy(c.ctx, update)
		if err != nil {
			return failed(fmt.Sprintf("set lease policy of queue %s", strconv.Quote(*queue)), err)
		}
		if c.json {
			return c.printPolicies([]goclient.LeasePolicy{updated})
		}
		c.printf("lease policy of queue %s set: lease %s, renewal interval %s, max claim lifetime %s, renewal enabled %s\n",
			*queue, textfmt.Duration(updated.LeaseDuration), textfmt.Duration(updated.RenewalInterval),
			textfmt.Duration(updated.MaxClaimLifetime), formatBool(updated.RenewalEnabled))
		return nil
	}
}}
