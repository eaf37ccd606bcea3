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
// many, on the same cluster, alternating, EnqueueRounds rounds each.
func (r *runner) enqueue(ctx context.Context) error {
	bin, err := r.riverPeer(ctx)
	if err != nil {
		return err
	}
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
	client, err := goclient.NewClient(pool, goclient.Config{OwnerID: "bench-enqueue"})
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
	ours := func() (float64, error) {
		start := time.Now()
		if _, err := client.EnqueueMany(ctx, jobs); err != nil {
			return 0, err
		}
		return float64(enqueueJobs) / time.Since(start).Seconds(), nil
	}
	river := func() (float64, error) {
		return runRiverPeer(ctx, bin, riverURL, enqueueJobs, 1, "defaults", "enqueue")
	}
	if err := r.againstRiver(&res, r.cfg.EnqueueRounds, ours, river); err != nil {
		return err
	}
	r.rep.Enqueue = append(r.rep.Enqueue, res)
	return nil
}
