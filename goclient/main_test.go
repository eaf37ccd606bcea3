package goclient_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// TestMain runs the tests against real PostgreSQL (internal/testdb) and then
// checks that no goroutine outlived its test: every client, worker, proxy
// and pool the tests made has been closed.
func TestMain(m *testing.M) {
	code := testdb.Run(m)
	if code == 0 {
		// pglocal's signal watcher lives as long as the process, by design.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/mightyetl/leasefence/internal/pglocal.register.func1.1")); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
