package main

import (
	"context"
	"flag"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

var changeControlUsage = help("change-control")

// runChangeControl is "leasectl change-control".
func runChangeControl(ctx context.Context, env *cliEnv, args []string) int {
	name, rest, done, code := readAction(env, "change-control", changeControlUsage, args, "show", "set")
	if done {
		return code
	}
	if name == "show" {
		return changeControlShow(ctx, env, rest)
	}
	return changeControlSet(ctx, env, rest)
}

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

// readChangeControl reads the change control as leasectl prints it.
func readChangeControl(ctx context.Context, s *session) (changeControlJSON, error) {
	c, err := s.admin.ChangeControl(ctx)
	return toChangeControlJSON(c), err
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
func printChangeControl(env *cliEnv, asJSON bool, c changeControlJSON) {
	if asJSON {
		_ = writeJSON(env.stdout, c)
		return
	}
	printf(env.stdout, "ticket pattern:       %s\nrequire approver:     %s\napprover must differ: %s\nreason pattern:       %s\n"+
		"maker-checker:        %s (proposals expire after %s)\nchanged at:           %s\nchanged by:           %s\n",
		c.TicketPattern, formatBool(c.RequireApprover), formatBool(c.ApproverMustDiffer), reasonPatternText(c.ReasonPattern),
		formatBool(c.RequireSecondOperator), textfmt.Duration(time.Duration(c.ProposalLifetimeSeconds)*time.Second),
		c.ChangedAt, c.ChangedByRole)
}

// reasonPatternText is the reason pattern as text output shows it.
func reasonPatternText(p *string) string {
	if p == nil {
		return "free text"
	}
	return *p
}

func changeControlShow(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("change-control show")
	common := addCommonFlags(fs, true)
	if done, code := parseFlags(env, fs, changeControlUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("change-control show: %s", err)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	c, err := readChangeControl(ctx, s)
	if err != nil {
		return env.fail("read change control", err)
	}
	printChangeControl(env, common.json(), c)
	return exitOK
}

func changeControlSet(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("change-control set")
	common := addCommonFlags(fs, true)
	reason := fs.String("reason", "", "why change control changes; kept in the control evidence (required)")
	ticket := fs.String("ticket", "", "change ticket of this change, checked against the current pattern")
	approver := fs.String("approver", "", "login that approved this change")
	pattern := fs.String("ticket-pattern", "", "regular expression every change ticket must match")
	requireApprover := fs.Bool("require-approver", false, "whether every change must name an approver (=true or =false)")
	mustDiffer := fs.Bool("approver-must-differ", false, "whether the approver must be another login (=true or =false)")
	reasonPattern := fs.String("reason-pattern", "", "regular expression every change reason must match ('' for free text)")
	secondOperator := fs.Bool("require-second-operator", false, "maker-checker: every change proposed by one operator login, approved by another (=true or =false)")
	lifetime := fs.Duration("proposal-lifetime", 0, "how long a proposal waits for approval, 1m to 720h")
	proposeOnly := fs.Bool("propose", false, "propose the whole setting for another operator to approve instead of changing it")
	if done, code := parseFlags(env, fs, changeControlUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("change-control set: %s", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["reason"] {
		return env.usageError("change-control set: --reason is required")
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	update := goclient.ChangeControlUpdate{TicketPattern: ifGiven(given, "ticket-pattern", pattern),
		RequireApprover: ifGiven(given, "require-approver", requireApprover), ApproverMustDiffer: ifGiven(given, "approver-must-differ", mustDiffer),
		ReasonPattern: ifGiven(given, "reason-pattern", reasonPattern), RequireSecondOperator: ifGiven(given, "require-second-operator", secondOperator),
		ProposalLifetime: ifGiven(given, "proposal-lifetime", lifetime)}
	if *proposeOnly {
		// A proposal holds the whole setting: what is left out is the current value.
		current, err := s.admin.ChangeControl(ctx)
		if err != nil {
			return env.fail("read change control", err)
		}
		var reasonPatternValue any
		if p := valueOr(update.ReasonPattern, current.ReasonPattern); p != "" {
			reasonPatternValue = p
		}
		return propose(ctx, env, s, "change_control", "", map[string]any{"ticket_pattern": valueOr(update.TicketPattern, current.TicketPattern),
			"require_approver": valueOr(update.RequireApprover, current.RequireApprover), "approver_must_differ": valueOr(update.ApproverMustDiffer, current.ApproverMustDiffer),
			"reason_pattern": reasonPatternValue, "require_second_operator": valueOr(update.RequireSecondOperator, current.RequireSecondOperator),
			"proposal_lifetime": intervalText(valueOr(update.ProposalLifetime, current.ProposalLifetime))}, *reason, *ticket)
	}
	written, err := s.admin.SetChangeControl(ctx, update, goclient.ChangeRecord{Reason: *reason, Ticket: *ticket, Approver: *approver})
	if err != nil {
		return env.fail("set change control", err)
	}
	updated := toChangeControlJSON(written)
	if common.json() {
		printChangeControl(env, true, updated)
		return exitOK
	}
	printf(env.stdout, "change control set: ticket pattern %s, require approver %s, approver must differ %s, reason pattern %s\n",
		updated.TicketPattern, formatBool(updated.RequireApprover), formatBool(updated.ApproverMustDiffer),
		reasonPatternText(updated.ReasonPattern))
	return exitOK
}
