package cli

import (
	"cmp"
	"flag"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

// changeControlJSON is the setting in JSON output.
type changeControlJSON struct {
	TicketPattern      string `json:"ticket_pattern"`
	RequireApprover    bool   `json:"require_approver"`
	ApproverMustDiffer bool   `json:"approver_must_differ"`
	ChangedAt          string `json:"changed_at"`
	ChangedByRole      string `json:"changed_by_role"`
	// ReasonPattern is the pattern every change reason must match; null
	// while reasons are free text.
	ReasonPattern *string `json:"reason_pattern"`
	// RequireSecondOperator is maker-checker: every change is proposed by
	// one operator login and approved by another (leasectl changes).
	RequireSecondOperator bool `json:"require_second_operator"`
	// ProposalLifetimeSeconds is how long a proposal waits for approval.
	ProposalLifetimeSeconds int64 `json:"proposal_lifetime_seconds"`
}

// toChangeControlJSON is c as leasectl prints it.
func toChangeControlJSON(c goclient.ChangeControl) changeControlJSON {
	var pattern *string
	if c.ReasonPattern != "" {
		pattern = &c.ReasonPattern
	}
	return changeControlJSON{TicketPattern: c.TicketPattern, RequireApprover: c.RequireApprover,
		ApproverMustDiffer: c.ApproverMustDiffer, ChangedAt: textfmt.Time(c.ChangedAt), ChangedByRole: c.ChangedByRole,
		ReasonPattern: pattern, RequireSecondOperator: c.RequireSecondOperator,
		ProposalLifetimeSeconds: int64(c.ProposalLifetime / time.Second)}
}

// printChangeControl prints the setting as text or JSON.
func (c *call) printChangeControl(setting goclient.ChangeControl) error {
	return c.print(toChangeControlJSON(setting), func() {
		c.printf("ticket pattern:       %s\nrequire approver:     %s\napprover must differ: %s\nreason pattern:       %s\n"+
			"maker-checker:        %s (proposals expire after %s)\nchanged at:           %s\nchanged by:           %s\n",
			setting.TicketPattern, formatBool(setting.RequireApprover), formatBool(setting.ApproverMustDiffer),
			cmp.Or(setting.ReasonPattern, freeText), formatBool(setting.RequireSecondOperator),
			textfmt.Duration(setting.ProposalLifetime.Truncate(time.Second)), textfmt.Time(setting.ChangedAt), setting.ChangedByRole)
	})
}

// freeText is how text output shows an empty reason pattern.
const freeText = "free text"

// changeControlShow is "leasectl change-control show".
var changeControlShow = &action{name: "change-control show", output: true, run: func(c *call) error {
	setting, err := get(c, "read change control", (*goclient.Admin).ChangeControl)
	if err != nil {
		return err
	}
	return c.printChangeControl(setting)
}}

// changeControlSet is "leasectl change-control set".
var changeControlSet = &action{name: "change-control set", output: true, required: []string{"reason"}, flags: func(fs *flag.FlagSet) runFunc {
	change := addChangeFlags(fs, "why change control changes; kept in the control evidence (required)")
	pattern := fs.String("ticket-pattern", "", "regular expression every change ticket must match")
	requireApprover := fs.Bool("require-approver", false, "whether every change must name an approver (=true or =false)")
	mustDiffer := fs.Bool("approver-must-differ", false, "whether the approver must be another login (=true or =false)")
	reasonPattern := fs.String("reason-pattern", "", "regular expression every change reason must match ('' for free text)")
	secondOperator := fs.Bool("require-second-operator", false, "maker-checker: every change proposed by one operator login, approved by another (=true or =false)")
	lifetime := fs.Duration("proposal-lifetime", 0, "how long a proposal waits for approval, 1m to 720h")
	proposeOnly := fs.Bool("propose", false, "propose the whole setting for another operator to approve instead of changing it")
	return func(c *call) error {
		update := goclient.ChangeControlUpdate{TicketPattern: ifGiven(c, "ticket-pattern", pattern),
			RequireApprover: ifGiven(c, "require-approver", requireApprover), ApproverMustDiffer: ifGiven(c, "approver-must-differ", mustDiffer),
			ReasonPattern: ifGiven(c, "reason-pattern", reasonPattern), RequireSecondOperator: ifGiven(c, "require-second-operator", secondOperator),
			ProposalLifetime: ifGiven(c, "proposal-lifetime", lifetime)}
		if *proposeOnly {
			// A proposal holds the whole setting: what is left out is the
			// current value.
			return c.propose("change_control", func(a *goclient.Admin) (int64, error) {
				return a.ProposeChangeControl(c.ctx, update, change.record())
			})
		}
		a, err := c.openAdmin()
		if err != nil {
			return err
		}
		written, err := a.SetChangeControl(c.ctx, update, change.record())
		if err != nil {
			return failed("set change control", err)
		}
		if c.json {
			return c.printChangeControl(written)
		}
		c.printf("change control set: ticket pattern %s, require approver %s, approver must differ %s, reason pattern %s\n",
			written.TicketPattern, formatBool(written.RequireApprover), formatBool(written.ApproverMustDiffer),
			cmp.Or(written.ReasonPattern, freeText))
		return nil
	}
}}
