package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const sampleProfile = `mode: atomic
example.com/m/goclient/a.go:1.1,2.2 3 1
example.com/m/goclient/a.go:3.1,4.2 1 0
example.com/m/goclient/sub/b.go:1.1,2.2 2 5
example.com/m/goclientx/c.go:1.1,2.2 50 0
mode: atomic
example.com/m/goclient/a.go:3.1,4.2 1 0
`

func writeProfile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cover.out")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

func gate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestGateFailsUnderThresholdAndListsMissedBlocks(t *testing.T) {
	p := writeProfile(t, sampleProfile)
	code, out, _ := gate(t, "-profile", p, "-name", "goclient", "-min", "100", "-prefix", "example.com/m/goclient")
	require.Equal(t, 1, code)
	// 5 of 6 statements: 83.33 %, printed rounded down; goclientx is not under the prefix.
	require.Contains(t, out, "coverage goclient: 83.3% of 6 statements (gate 100.0%)")
	require.Contains(t, out, "example.com/m/goclient/a.go:3.1,4.2 (1 statements)")
	require.NotContains(t, out, "goclientx")
}

func TestGatePassesAtThreshold(t *testing.T) {
	p := writeProfile(t, sampleProfile)
	code, out, _ := gate(t, "-profile", p, "-name", "goclient", "-min", "83.3", "-prefix", "example.com/m/goclient")
	require.Equal(t, 0, code, out)
}

func TestGateNeverRoundsUpToTheThreshold(t *testing.T) {
	// 9999 of 10000 statements is 99.99 %: it must print 99.9 % and fail a 100 % gate.
	p := writeProfile(t, "mode: set\nx/p/a.go:1.1,2.2 9999 1\nx/p/a.go:3.1,4.2 1 0\n")
	code, out, _ := gate(t, "-profile", p, "-name", "p", "-min", "100")
	require.Equal(t, 1, code)
	require.Contains(t, out, "99.9% of 10000 statements")
}

func TestGateCountsRepeatedBlocksOnce(t *testing.T) {
	p := writeProfile(t, "mode: set\nx/p/a.go:1.1,2.2 4 0\nx/p/a.go:1.1,2.2 4 1\n")
	code, out, _ := gate(t, "-profile", p, "-name", "p", "-min", "100")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "100.0% of 4 statements")
}

func TestGateRejectsBadInput(t *testing.T) {
	code, _, errOut := gate(t, "-name", "x")
	require.Equal(t, 64, code)
	require.Contains(t, errOut, "usage: covergate")

	code, _, errOut = gate(t, "-profile", filepath.Join(t.TempDir(), "missing"), "-name", "x")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "error: coverage x:")

	code, _, errOut = gate(t, "-profile", writeProfile(t, "mode: set\nnot a profile line\n"), "-name", "x")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "line 2")

	code, _, errOut = gate(t, "-profile", writeProfile(t, sampleProfile), "-name", "x", "-prefix", "nowhere")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no statement under")

	code, _, _ = gate(t, "-bogus")
	require.Equal(t, 64, code)
}
