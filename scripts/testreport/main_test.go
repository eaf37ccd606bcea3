package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A go test -json stream with a pass, a skip, a subtest failure, a package
// that failed outside any test and a package without tests.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestOne"}
{"Action":"output","Package":"m/a","Test":"TestOne","Output":"=== RUN   TestOne\n"}
{"Action":"output","Package":"m/a","Test":"TestOne","Output":"    one_test.go:9: logged figure 42\n"}
{"Action":"output","Package":"m/a","Test":"TestOne","Output":"--- PASS: TestOne (0.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestOne"}
{"Action":"output","Package":"m/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestSkip"}
{"Action":"output","Package":"m/a","Test":"TestTwo/sub","Output":"    --- FAIL: TestTwo/sub (0.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestTwo/sub"}
{"Action":"fail","Package":"m/a","Test":"TestTwo"}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"FAIL\tm/a\t0.01s\n"}
{"Action":"fail","Package":"m/a"}
{"Action":"output","Package":"m/b","Output":"testdb: cleanup failed\n"}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t0.02s\n"}
{"Action":"fail","Package":"m/b"}
{"Action":"output","Package":"m/c","Output":"?   \tm/c\t[no test files]\n"}
{"Action":"skip","Package":"m/c"}
not json at all
`

func TestFilterPrintsPlainOutputAndCountsEveryOutcome(t *testing.T) {
	state := filepath.Join(t.TempDir(), "tests.state")
	var out, errOut bytes.Buffer
	code := run([]string{"-state", state}, strings.NewReader(stream), &out, &errOut)
	require.Equal(t, 1, code, "a failed test fails the filter")
	text := out.String()
	require.Contains(t, text, "one_test.go:9: logged figure 42")
	require.Contains(t, text, "--- SKIP: TestSkip")
	require.Contains(t, text, "--- FAIL: TestTwo/sub")
	require.Contains(t, text, "FAIL\tm/a\t0.01s")
	require.Contains(t, text, "not json at all")
	require.NotContains(t, text, "=== RUN")
	require.NotContains(t, text, "--- PASS")
	require.NotContains(t, text, "PASS\n")

	out.Reset()
	code = run([]string{"-summarize", state}, nil, &out, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, out.String(), "FAIL\tm/b\t(failed outside any test)")
	require.Contains(t, out.String(), "?   \tm/c\t[no test files]")
	// TestOne passes; TestTwo and TestTwo/sub fail; m/b fails outside a test.
	require.True(t, strings.HasSuffix(out.String(), "tests: 1 passed, 3 failed, 1 skipped\n"), out.String())
}

func TestSummaryAddsUpSeveralRuns(t *testing.T) {
	state := filepath.Join(t.TempDir(), "tests.state")
	pass := `{"Action":"pass","Package":"m/a","Test":"TestA"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t0.01s\n"}
{"Action":"pass","Package":"m/a"}
`
	var out, errOut bytes.Buffer
	for i := 0; i < 2; i++ {
		require.Equal(t, 0, run([]string{"-state", state}, strings.NewReader(pass), &out, &errOut))
	}
	out.Reset()
	require.Equal(t, 0, run([]string{"-summarize", state}, nil, &out, &errOut))
	require.Equal(t, "go test results:\nok  \tm/a\t0.01s\nok  \tm/a\t0.01s\ntests: 2 passed, 0 failed, 0 skipped\n", out.String())
}

func TestSummaryFailsWhenNothingRanOrStateIsBad(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	require.Equal(t, 1, run([]string{"-summarize", filepath.Join(dir, "missing")}, nil, &out, &errOut))

	empty := filepath.Join(dir, "empty.state")
	require.NoError(t, os.WriteFile(empty, []byte("count 0 0 0\n"), 0o644))
	require.Equal(t, 1, run([]string{"-summarize", empty}, nil, &out, &errOut), "no test ran")

	bad := filepath.Join(dir, "bad.state")
	require.NoError(t, os.WriteFile(bad, []byte("count 1 x 0\n"), 0o644))
	require.Equal(t, 1, run([]string{"-summarize", bad}, nil, &out, &errOut))
	require.NoError(t, os.WriteFile(bad, []byte("count 1\n"), 0o644))
	require.Equal(t, 1, run([]string{"-summarize", bad}, nil, &out, &errOut))

	require.Equal(t, 64, run(nil, nil, &out, &errOut))
	require.Equal(t, 64, run([]string{"-state", "a", "-summarize", "b"}, nil, &out, &errOut))
	require.Equal(t, 64, run([]string{"-nope"}, nil, &out, &errOut))
	require.Equal(t, 1, run([]string{"-state", filepath.Join(dir, "no", "such", "dir")}, strings.NewReader(""), &out, &errOut))
}
