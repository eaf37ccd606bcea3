package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/textfmt"
)

var changesUsage = help("changes")

// runChanges is "leasectl changes".
func runChanges(ctx context.Context, env *cliEnv, args []string) int {
	name, rest, done, code := readAction(env, "changes", changesUsage, args, "list", "approve", "reject")
	if done {
		return code
	}
	if name == "list" {
		return changesList(ctx, env, rest)
	}
	return changesDecide(ctx, env, name, rest)
}

func changesList(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("changes list")
	common := addCommonFlags(fs, true)
	all := fs.Bool("all", false, "also the approved and rejected proposals")
	if done, code := parseFlags(env, fs, changesUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("changes list: %s", err)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	proposals, err := s.admin.Proposals(ctx, *all)
	if err != nil {
		return env.fail("list proposals", err)
	}
	if common.json() {
		_ = writeJSON(env.stdout, map[string][]goclient.Proposal{"proposals": append([]goclient.Proposal{}, proposals...)})
		return exitOK
	}
	tw := newTable(env.stdout)
	printf(tw, "ID\tKIND\tQUEUE\tSTATE\tPROPOSED BY\tPROPOSED AT\tEXPIRES AT\tVALUES\tREASON\n")
	for _, p := range proposals {
		printf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Kind, optionalText(p.Queue), p.State, p.ProposedBy,
			textfmt.Time(p.ProposedAt), textfmt.Time(p.ExpiresAt), string(p.ProposedValues), p.Reason)
	}
	_ = tw.Flush()
	return exitOK
}

func changesDecide(ctx context.Context, env *cliEnv, action string, args []string) int {
	name := "changes " + action
	fs := newFlagSet(name)
	common := addCommonFlags(fs, true)
	reason := fs.String("reason", "", "why it is rejected; kept in the control evidence (reject: required)")
	positional, done, code := parseArgs(env, fs, changesUsage, args)
	if done {
		return code
	}
	switch {
	case len(positional) == 0:
		return env.usageError("%s: say which proposal: leasectl %s ID", name, name)
	case len(positional) > 1:
		return env.usageError("%s: unexpected argument %q", name, positional[1])
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("%s: %s", name, err)
	}
	idArg := positional[0]
	id, err := strconv.ParseInt(idArg, 10, 64)
	if err != nil {
		return env.usageError("%s: proposal id %q is not a number", name, idArg)
	}
	if action == "reject" && *reason == "" {
		return env.usageError("%s: --reason is required", name)
	}
	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	if action == "approve" {
		err = s.admin.ApproveProposal(ctx, id)
	} else {
		err = s.admin.RejectProposal(ctx, id, *reason)
	}
	if err != nil {
		return env.fail(fmt.Sprintf("%s proposal %d", action, id), err)
	}
	printf(env.stdout, "proposal %d %s\n", id, map[string]string{"approve": "approved: the change took effect", "reject": "rejected"}[action])
	return exitOK
}

// propose records a proposal instead of a change (--propose) and prints
// what happens next.
func propose(ctx context.Context, env *cliEnv, s *session, kind, queue string, values map[string]any, reason, ticket string) int {
	id, err := s.admin.Propose(ctx, kind, queue, values, reason, ticket)
	if err != nil {
		return env.fail("propose "+kind+" change", err)
	}
	printf(env.stdout, "proposal %d recorded: it takes effect when another operator runs: leasectl changes approve %d\n", id, id)
	return exitOK
}
