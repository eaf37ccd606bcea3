// Command covergate reads a Go statement-coverage profile and fails when the
// coverage of the chosen packages is under a threshold. `make test` runs it
// for goclient (100 %), cmd/leasectl (95 %), audit (94 %), evidence (95 %),
// internal/demo (94 %), textfmt (100 %); the Makefile says how
// each is measured.
//
// Usage:
//
//	covergate -profile coverage/goclient.out -name goclient -min 100 \
//	    -prefix github.com/mightyetl/leasefence/goclient
//
// It prints one line with the figure, for example
//
//	coverage goclient: 100.0% of 812 statements (gate 100.0%)
//
// and, when the gate fails, the blocks no test ran (file:line.column
// ranges), then exits 1. Blocks that appear more than once (a profile
// merged from several test binaries) count as run when any copy ran. The
// printed figure is rounded down, so 99.96 % prints as 99.9 %, never as
// 100.0 %; the comparison itself is exact.
package main
