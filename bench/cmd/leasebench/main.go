package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mightyetl/leasefence/bench"
)

func main() {
	caseTime := flag.Duration("time", 10*time.Second, "measured time of each comparison, both sides together")
	out := flag.String("out", "bench", "folder for RESULTS.md and results.json")
	steps := flag.String("steps", "", "comma-separated steps to run (default: all), e.g. \"end to end,profile\"")
	flag.Parse()
	if err := run(*caseTime, *out, *steps); err != nil {
		fmt.Fprintln(os.Stderr, "leasebench:", err)
		os.Exit(1)
	}
}

func run(caseTime time.Duration, out, steps string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := bench.DefaultConfig(caseTime)
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	if steps != "" {
		cfg.Steps = strings.Split(steps, ",")
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	// make sets MAKELEVEL for the commands it runs.
	command := "go run ./bench/cmd/leasebench -time " + caseTime.String() + " -out " + out
	if steps != "" {
		command += " -steps '" + steps + "'"
	}
	if os.Getenv("MAKELEVEL") != "" {
		command = "make bench BENCH_TIME=" + caseTime.String()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(*os.File) error
	}{
		{"RESULTS.md", func(w *os.File) error { return rep.WriteMarkdown(w, command) }},
		{"results.json", func(w *os.File) error { return rep.WriteJSON(w) }},
	} {
		w, err := os.Create(filepath.Join(out, f.name))
		if err != nil {
			return err
		}
		if err := f.write(w); err != nil {
			_ = w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return nil
}
