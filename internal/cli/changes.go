package cli

import (
	"flag"
	"fmt"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

// changesList is "leasectl changes list".
var changesList = &action{name: "changes list", output: true, flags: func(fs *flag.FlagSet) runFunc {
	all := fs.Bool("all", false, "also the approved and rejected proposals")
	return func(c *call) error {
		a, err := c.openAdmin()
		if err != nil {
			return err
		}
		proposals, err := a.Proposals(c.ctx, *all)
		if err != nil {
			return failed("list proposals", err)
		}
		return c.print(map[string][]goclient.Proposal{"proposals": append([]goclient.Proposal{}, proposals...)}, func() {
			table(c.env.stdout, "ID\tKIND\tQUEUE\tSTATE\tPROPOSED BY\tPROPOSED AT\tEXPIRES AT\tVALUES\tREASON", proposals,
				func(p goclient.Proposal) []any {
					return []any{p.ID, p.Kind, optionalText(p.Queue), p.State, p.ProposedBy, textfmt.Time(p.ProposedAt),
						textfmt.Time(p.ExpiresAt), string(p.ProposedValues), p.Reason}
				})
		})
	}
}}

// changesDecide is "leasectl changes approve|reject ID": the action and
// what it prints after "proposal ID".
func changesDecide(verb, done string) *action {
	return &action{name: "changes " + verb, output: true, arg: "proposal", flags: func(fs *flag.FlagSet) runFunc {
		reason := fs.String("reason", "", "why it is rejected; kept in the control evidence (reject: required)")
		return func(c *call) error {
			if verb == "reject" && *reason == "" {
				return usagef("--reason is required")
			}
			a, err := c.openAdmin()
			if err != nil {
				return err
			}
			if verb == "approve" {
				err = a.ApproveProposal(c.ctx, c.id)
			} else {
				err = a.RejectProposal(c.ctx, c.id, *reason)
			}
			if err != nil {
				return failed(fmt.Sprintf("%s proposal %d", verb, c.id), err)
			}
			c.printf("proposal %d %s\n", c.id, done)
			return nil
		}
	}}
}

// changesApprove and changesReject are "leasectl changes approve|reject ID".
var (
	changesApprove = changesDecide("approve", "approved: the change took effect")
	changesReject  = changesDecide("reject", "rejected")
)

// propose records a proposal in place of a change (--propose) through
// send and prints what happens next; kind names the change in a failure.
func (c *call) propose(kind string, send func(*goclient.Admin) (int64, error)) error {
	a, err := c.openAdmin()
	if err != nil {
		return err
	}
	id, err := send(a)
	if err != nil {
		return failed("propose "+kind+" change", err)
	}
	c.printf("proposal %d recorded: it takes effect when another operator runs: leasectl changes approve %d\n", id, id)
	return nil
}
