package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// These tests run the real leasectl binary, built once with coverage, against
// real PostgreSQL databases from internal/testdb. Each run writes its
// coverage counters to coverDir; TestMain merges them into a profile (at
// $LEASECTL_COVERPROFILE when set) that the Makefile's coverage gate reads.

// envCoverProfile names the variable that says where to write the merged
// statement-coverage profile of cmd/leasectl.
const envCoverProfile = "LEASECTL_COVERPROFILE"

var (
	leasectlBin string // the binary under test
	coverDir    string // GOCOVERDIR of every run
)

// leasectl's exit codes, as its package doc gives them: the tests check
// the numbers a script sees.
const (
	exitOK       = 0
	exitError    = 1
	exitFindings = 2
	exitUsage    = 64
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "leasectl-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "leasectl tests: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	leasectlBin = filepath.Join(tmp, "leasectl")
	coverDir = filepath.Join(tmp, "cover")
	if err := os.Mkdir(coverDir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "leasectl tests: %v\n", err)
		return 1
	}
	build := exec.Command("go", "build", "-cover", "-coverpkg=github.com/mightyetl/leasefence/cmd/leasectl,github.com/mightyetl/leasefence/internal/cli",
		"-o", leasectlBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "leasectl tests: go build -cover: %v\n%s", err, out)
		return 1
	}
	// The tests spend their time waiting on leasectl processes and the
	// database, not on the CPU: run more of them at once than there are
	// cores, unless -test.parallel says otherwise.
	flag.Parse()
	parallelGiven := false
	flag.Visit(func(f *flag.Flag) { parallelGiven = parallelGiven || f.Name == "test.parallel" })
	if !parallelGiven {
		_ = flag.Set("test.parallel", "6")
	}
	code := testdb.Run(m)
	if err := writeCoverProfile(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "leasectl tests: coverage: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// writeCoverProfile merges the runs' counters into a text profile and
// prints the statement coverage of cmd/leasectl.
func writeCoverProfile(tmp string) error {
	entries, err := os.ReadDir(coverDir)
	if err != nil || len(entries) == 0 {
		return err // no run happened (a -run filter that matched nothing)
	}
	profile := os.Getenv(envCoverProfile)
	if profile == "" {
		profile = filepath.Join(tmp, "leasectl.cover")
	} else if profile, err = filepath.Abs(profile); err != nil {
		return err
	}
	if out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i="+coverDir, "-o="+profile).
		CombinedOutput(); err != nil {
		return fmt.Errorf("go tool covdata textfmt: %v: %s", err, out)
	}
	out, err := exec.Command("go", "tool", "covdata", "percent", "-i="+coverDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool covdata percent: %v: %s", err, out)
	}
	fmt.Printf("leasectl binary statement coverage (profile %s):\n%s", profile, out)
	return nil
}

// result is what one leasectl run did.
type result struct {
	code   int
	stdout string
	stderr string
}

// output is stdout and stderr together, for "appears nowhere" checks.
func (r result) output() string { return r.stdout + r.stderr }

// cleanEnv is the environment of a run: the test's own, without PG*
// variables (so only --database-url or the test's own choice connects),
// plus GOCOVERDIR.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "GOCOVERDIR=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOCOVERDIR="+coverDir)
	return append(env, extra...)
}

// leasectl runs the binary with args and returns what it did.
func leasectl(t *testing.T, args ...string) result {
	t.Helper()
	return leasectlEnv(t, nil, args...)
}

// leasectlEnv runs the binary with extra environment variables.
func leasectlEnv(t *testing.T, extraEnv []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, leasectlBin, args...)
	cmd.Env = cleanEnv(extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		require.True(t, ok, "run leasectl %v: %v", args, err)
		code = exitErr.ExitCode()
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// requireCode fails the test, showing the run's output, unless it exited
// with want.
func requireCode(t *testing.T, want int, r result, args ...any) {
	t.Helper()
	require.Equal(t, want, r.code, "%v\nstdout:\n%s\nstderr:\n%s", fmt.Sprint(args...), r.stdout, r.stderr)
}

// closedPortURL returns a URL to a loopback port where nothing listens.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "postgres://nobody@" + addr + "/nothing?sslmode=disable&connect_timeout=5"
}
