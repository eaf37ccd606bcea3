package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/bench/campaign"
	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/leaseport"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "campaign worker:", err)
		os.Exit(1)
	}
}

// skewedClock is the application wall clock, off by a fixed amount.
type skewedClock struct{ offset time.Duration }

// Now returns the skewed time.
func (c skewedClock) Now() time.Time { return time.Now().Add(c.offset) }

// observer records every renewal the client counts as renewed and every
// ownership loss.
type observer struct {
	goclient.NopObserver
	rec *campaign.Recorder
}

// Renewal records renewed outcomes.
func (o observer) Renewal(_ string, outcome goclient.RenewalOutcome) {
	if outcome == goclient.RenewalRenewed {
		o.rec.Note(campaign.Event{Kind: campaign.KindObsRenewed})
	}
}

// recordingPort records each claim of each renewal call and its answer.
type recordingPort struct {
	inner leaseport.Port
	rec   *campaign.Recorder
}

// RenewClaims renews through the inner port and records what happened.
func (p recordingPort) RenewClaims(ctx context.Context, claims []goclient.Claim) ([]goclient.RenewalResult, error) {
	ops := make([]int64, len(claims))
	for i, c := range claims {
		ops[i] = p.rec.Invoke(campaign.KindRenew, c.JobID(), c.FencingGeneration())
	}
	res, err := p.inner.RenewClaims(ctx, claims)
	for i, c := range claims {
		e := campaign.Event{Kind: campaign.KindRenew, Job: c.JobID(), Gen: c.FencingGeneration(), Outcome: campaign.OutUnknown}
		if err == nil && i < len(res) {
			e.Outcome, e.DBTime, e.Expires = string(res[i].Outcome), res[i].DatabaseTime, res[i].LeaseExpiresAt
		}
		p.rec.Done(ops[i], e)
	}
	return res, err
}

func run() error {
	url := flag.String("url", "", "worker login URL (through the fault proxy)")
	queue := flag.String("queue", "campaign.main", "queue to work")
	proc := flag.String("proc", "w", "process name in the history")
	history := flag.String("history", "", "history file")
	epoch := flag.Int64("epoch", 0, "when the campaign began, wall-clock Unix nanoseconds")
	lease := flag.Duration("lease", 2*time.Second, "lease duration (the queue policy)")
	interval := flag.Duration("interval", 500*time.Millisecond, "renewal interval (the queue policy)")
	skew := flag.Duration("skew", 0, "application clock skew")
	concurrency := flag.Int("concurrency", 2, "claim loops")
	seed := flag.Uint64("seed", 1, "seed of the work durations and outcomes")
	maxRun := flag.Duration("max-runtime", 10*time.Minute, "exit after this long in any case")
	flag.Parse()
	if *url == "" || *history == "" || *epoch == 0 {
		return errors.New("-url, -history and -epoch are required")
	}
	rec, err := campaign.NewRecorder(*history, *proc, time.Unix(0, *epoch))
	if err != nil {
		return err
	}
	defer rec.Close()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, cancelRun := context.WithTimeout(ctx, *maxRun)
	defer cancelRun()

	attempt := *interval * 4 / 5
	pool, err := goclient.NewPool(ctx, *url, 5*time.Second)
	if err != nil {
		return err
	}
	defer pool.Close()
	hcfg, err := goclient.ParsePoolConfig(*url, attempt)
	if err != nil {
		return err
	}
	hcfg.MaxConns = 4
	hbPool, err := pgxpool.NewWithConfig(ctx, hcfg)
	if err != nil {
		return err
	}
	defer hbPool.Close()
	client, err := goclient.NewClient(pool, leaseport.WithClock(leaseport.With(goclient.Config{
		OwnerID:         fmt.Sprintf("campaign-%s-%d", *proc, os.Getpid()),
		LeaseDuration:   *lease,
		RenewalInterval: *interval,
		SafetyMargin:    *interval,
		AttemptTimeout:  attempt,
		Observer:        observer{rec: rec},
	}, recordingPort{inner: leaseport.NewPg(hbPool, attempt), rec: rec}), skewedClock{*skew}))
	if err != nil {
		return err
	}
	defer client.Close()
	theClient = client

	var wg sync.WaitGroup
	for i := 0; i < *concurrency; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			loop(ctx, client, pool, rec, *queue, *lease, rand.New(rand.NewPCG(*seed, uint64(i))))
		}(i)
	}
	wg.Wait()
	return nil
}

// loop claims, works and finishes jobs until ctx ends (at most 100,000
// iterations).
func loop(ctx context.Context, client *goclient.Client, pool *pgxpool.Pool, rec *campaign.Recorder,
	queue string, lease time.Duration, rng *rand.Rand) {
	for i := 0; i < 100_000 && ctx.Err() == nil; i++ {
		op := rec.Invoke(campaign.KindClaim, 0, 0)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		job, err := client.Claim(cctx, queue)
		cancel()
		switch {
		case errors.Is(err, goclient.ErrNoJob):
			rec.Done(op, campaign.Event{Kind: campaign.KindClaim, Outcome: campaign.OutNone})
			sleep(ctx, 50*time.Millisecond)
			continue
		case err != nil:
			rec.Done(op, campaign.Event{Kind: campaign.KindClaim, Outcome: campaign.OutUnknown, Detail: "error"})
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		rec.Done(op, campaign.Event{Kind: campaign.KindClaim, Job: job.ID(), Gen: job.FencingGeneration(),
			Outcome: campaign.OutOK, DBTime: job.DatabaseTime(), Expires: job.LeaseExpiresAt()})
		l := client.Keep(ctx, job)
		work := time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
		if rng.IntN(5) == 0 {
			work = lease + time.Duration(rng.Int64N(int64(lease))) // outlives one lease: renewals matter
		}
		select {
		case <-l.Context().Done():
			rec.Note(campaign.Event{Kind: campaign.KindLost, Job: job.ID(), Gen: job.FencingGeneration(),
				Detail: lossCause(context.Cause(l.Context()))})
			l.Stop()
			continue
		case <-time.After(work):
		}
		kind := campaign.KindComplete
		switch r := rng.IntN(20); {
		case r == 0:
			kind = campaign.KindFail
		case r <= 2:
			kind = campaign.KindRetry
		}
		terminal(l, pool, rec, kind, job, lease)
		l.Stop()
	}
}

// terminal writes the job's terminal transition in one transaction under
// the lease's context: first the database time, then (for complete) the
// target row with the job's generation, then the fenced call, then COMMIT.
func terminal(l *goclient.Lease, pool *pgxpool.Pool, rec *campaign.Recorder, kind string, job goclient.Job, lease time.Duration) {
	op := rec.Invoke(kind, job.ID(), job.FencingGeneration())
	e := campaign.Event{Kind: kind, Job: job.ID(), Gen: job.FencingGeneration(), Outcome: campaign.OutAborted}
	defer func() { rec.Done(op, e) }()
	ctx, cancel := context.WithTimeout(l.Context(), 3*time.Second)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		return
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&e.DBTime); err != nil {
		return
	}
	if kind == campaign.KindComplete {
		if _, err := tx.Exec(ctx, `INSERT INTO campaign.target_effect (job_id, generation) VALUES ($1, $2)`,
			job.ID(), job.FencingGeneration()); err != nil {
			return
		}
	}
	e.Outcome = campaign.OutUnknown
	claim := job.Claim()
	switch kind {
	case campaign.KindComplete:
		err = clientOf(l).CompleteTx(ctx, tx, claim, nil)
	case campaign.KindRetry:
		// A retry delay longer than the lease: the job is not claimed again
		// before the expiry its last renewal granted.
		_, err = clientOf(l).RetryTx(ctx, tx, claim, lease+time.Second, "campaign_retry")
	case campaign.KindFail:
		err = clientOf(l).FailTx(ctx, tx, claim, "campaign_fail")
	}
	if errors.Is(err, goclient.ErrStaleClaim) {
		e.Outcome = campaign.OutStale
		return
	}
	if err != nil {
		return
	}
	if err := tx.Commit(ctx); err != nil {
		return
	}
	e.Outcome = campaign.OutOK
}

// theClient is the process's client, set once in run (the terminal calls
// need it; leases do not expose it).
var theClient *goclient.Client

func clientOf(*goclient.Lease) *goclient.Client { return theClient }

// lossCause names why a lease ended, without error text.
func lossCause(err error) string {
	switch {
	case errors.Is(err, goclient.ErrStaleClaim):
		return "stale"
	case errors.Is(err, goclient.ErrTrustDeadlinePassed):
		return "trust_deadline_passed"
	case errors.Is(err, goclient.ErrClosed):
		return "closed"
	default:
		return "other"
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
