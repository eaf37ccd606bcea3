package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mightyetl/leasefence/internal/cli"
)

// main runs leasectl (internal/cli) with the process's arguments and
// standard streams, and exits with its code.
func main() {
	// SIGHUP (the terminal went away) ends a command the way Ctrl-C does,
	// so that the demo still cleans up.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
