package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mightyetl/leasefence/textfmt"
)

// Exit codes of leasectl.
const (
	exitOK       = 0
	exitError    = 1
	exitFindings = 2
	exitUsage    = 64
)

// command is one leasectl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) int
}

// commands lists every subcommand: its summary in "leasectl --help" and
// its run func, which does its one action (action.do) or reads which of
// its actions to do (choose).
var commands = map[string]command{
	"migrate": {"apply, revert or inspect the migration bundle",
		choose("migrate", help("migrate"), migrateMove("up"), migrateMove("down"), migrateStatus)},
	"policy": {"show or set queue lease policies", choose("policy", help("policy"), policyShow, policySet)},
	"change-control": {"show or set the ticket pattern and approval rules of change records",
		choose("change-control", help("change-control"), changeControlShow, changeControlSet)},
	"jobs": {"list, show, cancel or replay single jobs (payload-blind)",
		choose("jobs", help("jobs"), jobsList, jobsShow, jobsCancel, jobsReplay)},
	"audit":      {"check the live database against the contract (exit 2 on findings)", auditAction.do},
	"health":     {"show lease health per queue", healthAction.do},
	"evidence":   {"write the control-evidence report (Markdown or JSON)", runEvidence},
	"deployment": {"record a deployed application version as control evidence", choose("deployment", help("deployment"), deploymentRecord)},
	"demo":       {"run the lease demo", demoAction.do},
	"retention": {"show, set or apply retention of finished jobs' data",
		choose("retention", help("retention"), retentionShow, retentionSet, retentionApply)},
	"erase":   {"erase one finished job's payload (data-subject request)", eraseAction.do},
	"changes": {"list, approve or reject proposed changes (maker-checker)", choose("changes", help("changes"), changesList, changesApprove, changesReject)},
	"access":  {"review which logins hold which leasefence roles", accessAction.do},
}

// cliEnv is what every command writes to.
type cliEnv struct {
	stdout io.Writer
	stderr io.Writer
}

// Run is leasectl without the process around it: it runs the command
// that args name (os.Args without the program's name), writes its output
// to stdout and its errors to stderr, and returns the exit code (0, 1, 2
// or 64). Cancelling ctx stops the command; the demo still cleans up.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	env := &cliEnv{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, mainHelp())
		return exitUsage
	}
	name := args[0]
	if helpWords[name] {
		if len(args) > 1 {
			if cmd, ok := commands[args[1]]; ok {
				return cmd.run(ctx, env, []string{"--help"})
			}
			return env.usageError("unknown command %q", args[1])
		}
		fmt.Fprint(stdout, mainHelp())
		return exitOK
	}
	cmd, ok := commands[name]
	if !ok {
		return env.usageError("unknown command %q", name)
	}
	return cmd.run(ctx, env, args[1:])
}

// mainHelp is the text of "leasectl --help": help/main.txt with every
// command and its summary.
func mainHelp() string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "  %-11s %s\n", name, commands[name].summary)
	}
	return help("main", b.String())
}

// usageError prints a one-line usage error and returns exitUsage.
func (e *cliEnv) usageError(format string, args ...any) int {
	printf(e.stderr, "error: usage: %s (run \"leasectl --help\")\n", fmt.Sprintf(format, args...))
	return exitUsage
}

// fail prints "error: <doing>: <cause>" and PostgreSQL's DETAIL and HINT,
// and returns exitError.
func (e *cliEnv) fail(doing string, err error) int {
	fmt.Fprint(e.stderr, formatError(doing, err))
	return exitError
}

// formatError renders an error the way leasectl prints it, through
// printf like every other output: its texts joined into one line each
// (textfmt.OneLine). A PostgreSQL error shows its own message and SQLSTATE
// and then its DETAIL and HINT on their own lines.
func formatError(doing string, err error) string {
	var b strings.Builder
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		printf(&b, "error: %s: %s\n", doing, textfmt.OneLine(err.Error()))
		return b.String()
	}
	printf(&b, "error: %s: %s (SQLSTATE %s)\n", doing, textfmt.OneLine(pgErr.Message), pgErr.Code)
	if pgErr.Detail != "" {
		printf(&b, "DETAIL: %s\n", textfmt.OneLine(pgErr.Detail))
	}
	if pgErr.Hint != "" {
		printf(&b, "HINT: %s\n", textfmt.OneLine(pgErr.Hint))
	}
	return b.String()
}

// newFlagSet returns a flag set for a subcommand that reports errors to
// parseArgs instead of printing them or exiting.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}
