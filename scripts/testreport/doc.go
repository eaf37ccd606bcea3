// Command testreport turns `go test -json` into readable output and keeps a
// running tally of test results across several go test runs, so that
// `make test` can end with go test's own package lines and one count line.
//
// Filter mode reads go test -json on standard input:
//
//	go test -json ./... | testreport -state coverage/tests.state
//
// It prints go test's output as plain go test would, plus the lines a
// plain run hides for passing tests that matter here (--- SKIP lines, and
// what tests log). It leaves out the === RUN/PAUSE/CONT/NAME and
// --- PASS chatter. It appends the package result lines (ok, FAIL, ?) and
// the pass/fail/skip counts to the state file, and exits 1 when a test or
// package failed.
//
// Summary mode prints what the state file holds:
//
//	testreport -summarize coverage/tests.state
//
// ending with one line in the form CI reads,
//
//	tests: 412 passed, 0 failed, 0 skipped
//
// and exits 1 when anything failed or nothing ran.
package main
