package goclient_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// TestMain prepares the database the package Examples read from
// LEASEFENCE_EXAMPLE_DATABASE_URL (example_setup_test.go), runs the tests
// against real PostgreSQL (internal/testdb) and then
// checks that no goroutine outlived its test: every client, worker, proxy
// and pool the tests made has been closed.
func TestMain(m *testing.M) {
	cleanupExamples, err := prepareExampleDatabase(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "prepare the examples' database: %v\n", err)
		os.Exit(1)
	}
	code := testdb.Run(m)
	cleanupExamples()
	if code == 0 {
		// pglocal's signal watcher lives as long as the process, by design.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/mightyetl/leasefence/internal/pglocal.register.func1.1")); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
