// Command leasebench runs leasefence's benchmarks on a durable throwaway
// PostgreSQL it starts itself and writes bench/RESULTS.md and
// bench/results.json. make bench runs it:
//
//	go run ./bench/cmd/leasebench -time 10s -out bench
//
// -time is the measured time of each comparison, both sides together;
// make bench BENCH_TIME=3s is the short form (about 4 minutes on a
// 2-core machine, 4.5 when it is loaded; see bench/notes.md). -steps
// runs only the named steps (see bench.Config.Steps).
package main
