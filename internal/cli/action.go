package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/goclient"
)

// Every leasectl action is declared as data: an action names its flags,
// whether it takes --output and a positional id, which flags it requires,
// and a run func that does the one thing the action is for. do, the one
// runner, reads the arguments, refuses what is wrong with them (exit 64),
// runs the action, closes what it opened and turns what run returned into
// the exit code and the error message.

// action is one thing leasectl does: a command with no actions ("health")
// or one action of a command with several ("jobs list", see choose).
type action struct {
	// name is the command and its action, as usage errors and the flag set
	// name it: "jobs list".
	name string
	// usage is the help text --help prints; choose fills it in for a
	// command with several actions.
	usage string
	// output says that the action takes --output text|json.
	output bool
	// noDatabase says that the action declares no --database-url (the demo
	// declares its own, with another meaning).
	noDatabase bool
	// arg names the one positional id the action takes ("job" for "jobs
	// show ID"); empty when it takes none.
	arg string
	// required are the flags that must be given, checked in this order.
	required []string
	// flags registers the action's own flags on fs and returns its run
	// func, which reads them; nil when the action has no flags of its own,
	// and run is used.
	flags func(fs *flag.FlagSet) runFunc
	// run is the action of an action without flags of its own.
	run runFunc
}

// runFunc does an action. It returns nil, errFindings, a usage error
// (usagef) or a failure (failed); the runner prints them.
type runFunc func(c *call) error

// call is one run of an action: its context, output and arguments, and
// what it opened.
type call struct {
	ctx  context.Context
	env  *cliEnv
	name string // the action's name
	// databaseURL is --database-url; json is --output json.
	databaseURL string
	json        bool
	// id is the positional id of an action that takes one.
	id int64
	// given holds the name of every flag given on the command line.
	given map[string]bool
	// pool is the pool pool opened, and admin the Admin over it: the
	// actions claim nothing, so they start no heartbeat and open no second
	// pool. closers close what the call opened, in the order of opening.
	pool    *pgxpool.Pool
	admin   *goclient.Admin
	closers []func()
}

// errFindings ends an action that printed findings: exit 2.
var errFindings = errors.New("findings")

// usageError is a usage error of an action: the runner prints it after
// the action's name and exits 64.
type usageError string

// Error is the message.
func (u usageError) Error() string { return string(u) }

// usagef is a usage error.
func usagef(format string, args ...any) error { return usageError(fmt.Sprintf(format, args...)) }

// failure is an error of an action: the runner prints "error: doing: err"
// (formatError) and exits 1.
type failure struct {
	doing string
	err   error
}

// Error is the failure as one line.
func (f *failure) Error() string { return f.doing + ": " + f.err.Error() }

// failed is err as a failure of doing, or nil when err is nil.
func failed(doing string, err error) error {
	if err == nil {
		return nil
	}
	return &failure{doing, err}
}

// do runs the action with the arguments after its name and returns the
// exit code.
func (a *action) do(ctx context.Context, env *cliEnv, args []string) int {
	c := &call{ctx: ctx, env: env, name: a.name, given: map[string]bool{}}
	fs := newFlagSet(a.name)
	if !a.noDatabase {
		fs.StringVar(&c.databaseURL, "database-url", "",
			"PostgreSQL URL or keyword/value string; empty uses PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, ...")
	}
	output := "text"
	if a.output {
		fs.StringVar(&output, "output", "text", "output format: text or json")
	}
	run := a.run
	if a.flags != nil {
		run = a.flags(fs)
	}
	positional, done, code := parseArgs(env, fs, a.usage, args)
	if done {
		return code
	}
	fs.Visit(func(f *flag.Flag) { c.given[f.Name] = true })
	err := a.check(c, positional, output)
	if err == nil {
		err = run(c)
	}
	for _, closeOne := range c.closers {
		closeOne()
	}
	return c.exit(err)
}

// check refuses what is wrong with the arguments before the action runs:
// a missing or extra positional argument, an --output other than text or
// json, a required flag left out, an id that is no number. It sets c.json
// and c.id.
func (a *action) check(c *call, positional []string, output string) error {
	want := 0
	if a.arg != "" {
		want = 1
	}
	switch {
	case len(positional) < want:
		return usagef("say which %s: leasectl %s ID", a.arg, a.name)
	case len(positional) > want:
		return usagef("unexpected argument %q", positional[want])
	case output != "text" && output != "json":
		return usagef("--output must be text or json, not %q", output)
	}
	c.json = output == "json"
	for _, name := range a.required {
		if !c.given[name] {
			return usagef("--%s is required", name)
		}
	}
	if a.arg == "" {
		return nil
	}
	id, err := strconv.ParseInt(positional[0], 10, 64)
	if err != nil {
		return usagef("%s id %q is not a number", a.arg, positional[0])
	}
	c.id = id
	return nil
}

// exit prints what err says and returns the exit code.
func (c *call) exit(err error) int {
	var usage usageError
	var f *failure
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFindings):
		return exitFindings
	case errors.As(err, &usage):
		return c.env.usageError("%s: %s", c.name, usage)
	}
	errors.As(err, &f) // anything else run returns is a failure (runFunc)
	return c.env.fail(f.doing, f.err)
}

// openPool connects (once) and returns the pool of the call, for the
// packages that read through one (audit, evidence).
func (c *call) openPool() (*pgxpool.Pool, error) {
	if c.pool == nil {
		pool, err := connectPool(c.ctx, c.databaseURL)
		if err != nil {
			return nil, failed("connect to database", err)
		}
		c.pool = pool
		c.admin, _ = goclient.NewAdmin(pool) // refuses only a nil pool
		c.closers = append(c.closers, pool.Close)
	}
	return c.pool, nil
}

// openAdmin connects (once) and returns the Admin of the call.
func (c *call) openAdmin() (*goclient.Admin, error) {
	_, err := c.openPool()
	return c.admin, err
}

// openConn opens one connection without a statement timeout
// (connectConn), closed when the call ends.
func (c *call) openConn() (*pgx.Conn, error) {
	conn, err := connectConn(c.ctx, c.databaseURL)
	if err != nil {
		return nil, failed("connect to database", err)
	}
	c.closers = append(c.closers, func() { _ = conn.Close(context.WithoutCancel(c.ctx)) })
	return conn, nil
}

// get connects (openAdmin) and reads one thing with the Admin; an error
// is a failure of doing.
func get[T any](c *call, doing string, read func(*goclient.Admin, context.Context) (T, error)) (T, error) {
	var v T
	a, err := c.openAdmin()
	if err != nil {
		return v, err
	}
	v, err = read(a, c.ctx)
	return v, failed(doing, err)
}

// print writes v as JSON under --output json, else calls text.
func (c *call) print(v any, text func()) error {
	if c.json {
		_ = writeJSON(c.env.stdout, v)
		return nil
	}
	text()
	return nil
}

// printf writes a line of text output (see printf).
func (c *call) printf(format string, args ...any) { printf(c.env.stdout, format, args...) }

// ifGiven is p when the flag name was given, else nil: an update's "keep
// the current value".
func ifGiven[T any](c *call, name string, p *T) *T {
	if c.given[name] {
		return p
	}
	return nil
}
