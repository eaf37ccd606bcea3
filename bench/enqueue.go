package bench

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/mightyetl/leasefence/goclient"
)

// enqueueJobs is the number of jobs of one enqueue round of each side:
// one EnqueueMany call (goclient.MaxBatchJobs) against one InsertManyFast.
const enqueueJobs = goclient.MaxBatchJobs

// enqueue times batch enqueue: Client.EnqueueMany (enqueue_jobs, as a
// producer login) of enqueueJobs jobs against River's InsertManyFast of as
// many, on the same cluster, alternating, E2ERounds rounds each.
func (r *runner) enqueue(ctx context.Context) error {
	bin, err := buildRiverPeer(ctx, r.cfg.PeersDir)
	if err != nil {
		return err
	}
	defer removeDir(bin)
	if _, err := r.e.admin.Exec(ctx, `CREATE DATABASE river_enqueue`); err != nil {
		return err
	}
	riverURL := withPoolSize(r.e.cluster.URL("river_enqueue"))
	role := r.e.workerRole + "_producer"
	// The name is the generated worker role's ([a-z0-9_]) with a suffix.
	if _, err := r.e.admin.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE durable_job_producer`,
		role, r.e.password)); err != nil {
		return err
	}
	u, err := url.Parse(r.e.cluster.URL("postgres"))
	if err != nil {
		return err
	}
	u.User = url.UserPassword(role, r.e.password)
	pool, err := goclient.NewPool(ctx, withPoolSize(u.String()), time.Minute)
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := goclient.New(pool, goclient.WithOwnerID("bench-enqueue"))
	if err != nil {
		return err
	}
	defer client.Close()
	jobs := make([]goclient.EnqueueParams, enqueueJobs)
	for i := range jobs {
		jobs[i] = goclient.EnqueueParams{Queue: "bench_enqueue", Payload: []byte(`{}`)}
	}
	res := E2EResult{Name: fmt.Sprintf("enqueue %d jobs: Client.EnqueueMany (enqueue_jobs) against River's InsertManyFast", enqueueJobs),
		Jobs: enqueueJobs, Goal: 0.5}
	var ratios []float64
	for round := 0; round < r.cfg.E2ERounds; round++ {
		start := time.Now()
		if _, err := client.EnqueueMany(ctx, jobs); err != nil {
			return err
		}
		ours := float64(enqueueJobs) / time.Since(start).Seconds()
		river, err := runRiverPeer(ctx, bin, riverURL, enqueueJobs, 1, "defaults", "enqueue")
		if err != nil {
			return err
		}
		res.OursPerSec = append(res.OursPerSec, ours)
		res.RiverPerSec = append(res.RiverPerSec, river)
		ratios = append(ratios, ours/river)
	}
	res.Ratio = median(ratios)
	r.cfg.Logf("bench: %-45s ours %8.0f jobs/s  River %8.0f jobs/s  ratio %.2f", res.Name, median(res.OursPerSec),
		median(res.RiverPerSec), res.Ratio)
	r.rep.Enqueue = append(r.rep.Enqueue, res)
	return nil
}
