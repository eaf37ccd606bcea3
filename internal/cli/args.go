package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Every subcommand reads its arguments through parseArgs (action.do): flags and positional arguments may come in
// any order ("jobs show --database-url URL 201" and "jobs show 201
// --database-url URL" are the same), "--" ends the flags, and -h, -help or
// --help anywhere prints the command's usage and exits 0. The standard flag
// package parses every flag (its syntax, its errors); parseArgs only hands
// it one flag at a time, so that a positional argument does not end the
// flags as it does for flag.Parse.

// helpWords are the arguments that ask for leasectl's usage (Run) or a
// command's usage in place of its action (choose); as a flag, the flag
// package reads -h, -help and --help.
var helpWords = map[string]bool{"-h": true, "-help": true, "--help": true, "help": true}

// parseArgs parses the flags in args into fs wherever they stand and returns
// the positional arguments in their order. It returns done=true with the
// exit code when the caller must stop: help was asked for (0, the usage and
// the flags on stdout), or a flag was wrong (64, one line on stderr).
func parseArgs(env *cliEnv, fs *flag.FlagSet, usage string, args []string) (positional []string, done bool, code int) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			positional = append(positional, arg)
			continue
		}
		n := 1
		if takesValue(fs, arg) && i+1 < len(args) {
			n = 2
		}
		if err := fs.Parse(args[i : i+n]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(env.stdout, usage)
				fmt.Fprintln(env.stdout, "\nFlags:")
				fs.SetOutput(env.stdout)
				fs.PrintDefaults()
				return nil, true, exitOK
			}
			return nil, true, env.usageError("%s: %s", fs.Name(), err)
		}
		i += n - 1
	}
	return positional, false, exitOK
}

// takesValue reports whether the flag argument arg ("-name" or "--name",
// without "=value") names a flag of fs that reads the next argument as its
// value: any flag but a boolean one. An unknown name takes no value (the
// flag package then refuses it).
func takesValue(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// choose is the run func of a command with several actions ("policy
// show", "jobs list"), each of which gets the command's usage. It reads the
// action, the first argument, and does it with the arguments after it; it
// prints the usage in its place when help is asked for (0), and refuses an
// action that is missing or unknown (64). The action comes before the
// flags, so that the flags can be read with the action's own flag set;
// flags before it get a usage error that says so.
func choose(command, usage string, actions ...*action) func(context.Context, *cliEnv, []string) int {
	names := make([]string, len(actions))
	for i, a := range actions {
		a.usage = usage
		names[i] = strings.TrimPrefix(a.name, command+" ")
	}
	want := names[len(names)-1]
	if len(names) > 1 {
		want = strings.Join(names[:len(names)-1], ", ") + " or " + want
	}
	return func(ctx context.Context, env *cliEnv, args []string) int {
		if len(args) == 0 {
			return env.usageError("%s: say %s", command, want)
		}
		if helpWords[args[0]] {
			fmt.Fprint(env.stdout, usage)
			return exitOK
		}
		for i, name := range names {
			if args[0] == name {
				return actions[i].do(ctx, env, args[1:])
			}
		}
		if strings.HasPrefix(args[0], "-") {
			return env.usageError("%s: say the action (%s) before the flags: leasectl %s ACTION [flags]",
				command, want, command)
		}
		return env.usageError("%s: unknown action %q (want %s)", command, args[0], want)
	}
}
