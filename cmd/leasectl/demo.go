package main

import (
	"context"
	"fmt"
)

// runDemo is "leasectl demo". This stub is replaced by the demo itself.
func runDemo(_ context.Context, env *cliEnv, _ []string) int {
	fmt.Fprintln(env.stderr, "demo: not built yet")
	return exitError
}
