package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// subcommands is every command with its actions (none for a command
// without): the table the argument tests run over.
var subcommands = map[string][]string{
	"access":         nil,
	"audit":          nil,
	"change-control": {"show", "set"},
	"changes":        {"list", "approve", "reject"},
	"demo":           nil,
	"deployment":     {"record"},
	"erase":          nil,
	"evidence":       nil,
	"health":         nil,
	"jobs":           {"list", "show", "cancel", "replay"},
	"migrate":        {"up", "down", "status"},
	"policy":         {"show", "set"},
	"retention":      {"show", "set", "apply"},
}

// eachSubcommand returns every "command [action]" of leasectl.
func eachSubcommand(t *testing.T) [][]string {
	t.Helper()
	require.ElementsMatch(t, listedCommands(t), slices.Collect(maps.Keys(subcommands)),
		"every command is in the table of the argument tests")
	var out [][]string
	for _, cmd := range slices.Sorted(maps.Keys(subcommands)) {
		if len(subcommands[cmd]) == 0 {
			out = append(out, []string{cmd})
		}
		for _, action := range subcommands[cmd] {
			out = append(out, []string{cmd, action})
		}
	}
	return out
}

// listedCommands is every command "leasectl --help" lists: the first word
// of each line between "Commands:" and the blank line after it.
func listedCommands(t *testing.T) []string {
	t.Helper()
	r := leasectl(t, "--help")
	requireCode(t, exitOK, r)
	_, list, found := strings.Cut(r.stdout, "\nCommands:\n")
	require.True(t, found, r.stdout)
	list, _, _ = strings.Cut(list, "\n\n")
	var names []string
	for line := range strings.Lines(list) {
		names = append(names, strings.Fields(line)[0])
	}
	return names
}

// Issue 37, item 5: flag.Parse stops at the first positional argument, so
// "jobs show --database-url URL 201" said "say which job" and "health
// extra --help" was a usage error. Every subcommand now reads its flags
// wherever they stand, prints its usage and flags for --help or -h
// (exit 0) and refuses a wrong flag with one line and exit 64.
func TestEverySubcommandReadsFlagsWhereverTheyStand(t *testing.T) {
	t.Parallel()
	for _, sub := range eachSubcommand(t) {
		t.Run(strings.Join(sub, " "), func(t *testing.T) {
			t.Parallel()
			// Help before, after and among positional arguments.
			for _, tail := range [][]string{{"--help"}, {"-h"}, {"1", "--help"}, {"--database-url", "x", "2", "-help"}} {
				args := append(slices.Clone(sub), tail...)
				r := leasectl(t, args...)
				requireCode(t, exitOK, r, args)
				require.Contains(t, r.stdout, "Usage:", args)
				require.Contains(t, r.stdout, "\nFlags:\n", args)
				require.Contains(t, r.stdout, "-database-url", args)
				require.Empty(t, r.stderr, args)
			}
			// A flag that does not exist, before or after an argument.
			for _, tail := range [][]string{{"--bogus"}, {"1", "--bogus"}, {"--bogus=1", "1"}} {
				args := append(slices.Clone(sub), tail...)
				requireUsageError(t, args)
				r := leasectl(t, args...)
				require.Contains(t, r.stderr, "flag provided but not defined: -bogus", args)
			}
			// A flag without its value.
			args := append(slices.Clone(sub), "--database-url")
			requireUsageError(t, args)
		})
	}
	// A command with actions: its usage in place of the action, one line for a
	// missing, unknown or late action.
	for _, cmd := range slices.Sorted(maps.Keys(subcommands)) {
		if len(subcommands[cmd]) == 0 {
			continue
		}
		for _, help := range []string{"--help", "-h", "help"} {
			r := leasectl(t, cmd, help)
			requireCode(t, exitOK, r, cmd, help)
			require.Contains(t, r.stdout, "Usage:", cmd)
		}
		for _, args := range [][]string{{cmd}, {cmd, "sideways"}, {cmd, "--database-url", "x", subcommands[cmd][0]}} {
			requireUsageError(t, args)
		}
		r := leasectl(t, cmd, "--output", "json", subcommands[cmd][0])
		require.Contains(t, r.stderr, "before the flags: leasectl "+cmd+" ACTION [flags]")
	}
}

// The one command that takes a positional argument reads its flags before,
// after and around it, against a real database.
func TestJobsShowReadsFlagsBeforeAndAfterTheJobID(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ids := jobsFixture(t, db.Pool(t))
	operator := db.LoginURL(t, "durable_job_operator")
	id := fmt.Sprint(ids[0])
	for _, args := range [][]string{
		{"jobs", "show", "--database-url", operator, id},
		{"jobs", "show", id, "--database-url", operator},
		{"jobs", "show", "--output", "json", id, "--database-url=" + operator},
		{"jobs", "show", "--database-url", operator, "--", id},
	} {
		r := leasectl(t, args...)
		requireCode(t, exitOK, r, args)
		require.Contains(t, r.stdout, id, args)
	}
	for _, args := range [][]string{
		{"jobs", "show", "--database-url", operator},
		{"jobs", "cancel", "--output", "json", "--database-url", operator},
	} {
		requireUsageError(t, args)
		r := leasectl(t, args...)
		require.Contains(t, r.stderr, "say which job", args)
	}
	for _, args := range [][]string{{"jobs", "show", "--output", "yaml", id}, {"jobs", "replay", id, "--output", "yaml"}} {
		requireUsageError(t, args)
		r := leasectl(t, args...)
		require.Contains(t, r.stderr, "--output must be text or json", args)
	}
}
