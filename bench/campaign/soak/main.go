package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mightyetl/leasefence/bench/campaign"
)

func main() { os.Exit(run()) }

func run() int {
	ops := flag.Int("ops", 5000, "checked operations to reach")
	seed := flag.Uint64("seed", 1, "seed of the fault schedule")
	workers := flag.Int("workers", 4, "worker processes")
	maxDur := flag.Duration("max-duration", 0, "stop after this long whatever -ops says (default: 1 s per 5 operations, at least 2 minutes)")
	flag.Parse()
	if *maxDur == 0 {
		*maxDur = max(2*time.Minute, time.Duration(*ops)*time.Second/5)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	bin, err := os.MkdirTemp("", "soak-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	defer os.RemoveAll(bin)
	worker, err := campaign.BuildWorker(ctx, bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	dir, err := os.MkdirTemp("", "soak-history-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	res, err := campaign.Run(ctx, campaign.Config{Seed: *seed, Ops: *ops, MaxDuration: *maxDur, Workers: *workers,
		WorkerBinary: worker, Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	for _, v := range res.Violations {
		fmt.Fprint(os.Stderr, v.Report(res.Seed))
	}
	if len(res.Violations) > 0 {
		fmt.Fprintf(os.Stderr, "soak: histories kept in %s\n", dir)
	} else {
		_ = os.RemoveAll(dir)
	}
	fmt.Printf("soak: %d operations checked, %d fault kinds, %d violations, seed %d\n",
		res.Ops, res.FaultKinds(), len(res.Violations), res.Seed)
	if len(res.Violations) > 0 {
		return 1
	}
	return 0
}
