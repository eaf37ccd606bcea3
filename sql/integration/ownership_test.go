package sqlintegration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// An execution that lasts three times the original lease
// stays with its worker while the worker renews; a second worker polling all
// along never gets the job.
func TestHealthyRenewalsKeepExecutionLongerThanLeaseSinglyOwned(t *testing.T) {
	t.Parallel()
	f := setup(t)
	jobID := f.enqueue(t, `{"extract": "orders"}`)

	ownerURL := f.workerURL(t)
	work := f.connect(t, ownerURL)      // the handler's session
	heartbeat := f.connect(t, ownerURL) // the heartbeat's own session, same login role
	rival := f.worker(t)

	c := mustClaim(t, f.ctx, work, f.queue, "worker-a")
	require.Equal(t, jobID, c.JobID)
	require.Equal(t, testRenewalInterval, c.RenewalInterval, "the claim hands out the queue's renewal interval")
	originalExpiry := c.ExpiresAt

	ctx, stop := context.WithCancel(f.ctx)
	defer stop()
	var (
		wg           sync.WaitGroup
		rivalErr     error
		rivalGot     []claim
		rivalPolls   int
		heartbeatOK  int
		heartbeatBad []string
		lastExpiry   = c.ExpiresAt
	)
	wg.Add(2)
	go func() { // the second worker polls the whole time
		defer wg.Done()
		for ctx.Err() == nil {
			// Calls run on f.ctx: stopping the loop never cuts a call short,
			// so a claim that committed is always seen.
			got, ok, err := claimNext(f.ctx, rival, f.queue, "worker-b")
			if err != nil {
				rivalErr = err
				return
			}
			rivalPolls++
			if ok {
				rivalGot = append(rivalGot, got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	go func() { // the heartbeat renews every renewal interval
		defer wg.Done()
		ticker := time.NewTicker(c.RenewalInterval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			r, err := renew(f.ctx, heartbeat, c.JobID, c.Token, "worker-a")
			switch {
			case err != nil:
				heartbeatBad = append(heartbeatBad, err.Error())
				return
			case r.Outcome != "renewed":
				heartbeatBad = append(heartbeatBad, r.Outcome)
				return
			case r.ExpiresAt.Before(lastExpiry):
				heartbeatBad = append(heartbeatBad, "expiry moved backwards")
				return
			}
			lastExpiry = *r.ExpiresAt
			heartbeatOK++
		}
	}()

	// The handler works for three lease durations, measured by the database.
	f.waitDatabaseTimePast(t, c.DatabaseTime.Add(3*testLeaseDuration))
	stop()
	wg.Wait()

	require.NoError(t, rivalErr, "the rival worker's claims ran")
	require.Empty(t, heartbeatBad, "every renewal of the healthy claim was renewed")
	require.GreaterOrEqual(t, heartbeatOK, 8, "the heartbeat renewed about every 300 ms for 3 s")
	require.Greater(t, rivalPolls, 20, "the rival worker kept polling during the whole execution")
	require.Empty(t, rivalGot, "the rival worker never got the job while renewals were current")
	require.True(t, lastExpiry.After(originalExpiry.Add(testLeaseDuration)), "renewals moved the expiry well past the original lease")

	s := f.state(t, jobID)
	require.Equal(t, "RUNNING", s.Status)
	require.Equal(t, int32(1), s.Attempt, "one claim, no reclaim")
	require.Equal(t, int64(1), s.Generation, "the fencing generation never moved")
	require.Equal(t, int64(heartbeatOK), s.RenewalCount, "the job row counts every renewal")

	require.NoError(t, complete(f.ctx, work, c, "worker-a"), "the original worker still holds a fenced claim after 3 leases")
	require.Equal(t, "SUCCEEDED", f.state(t, jobID).Status)
	requireNothingClaimable(t, f.ctx, rival, f.queue, "worker-b", "a completed job is never claimed again")
}

// Replicas that claim at the same instant, each from its
// own session, never share a job, and while the winners renew nobody else
// gets their jobs, past the original expiry too.
func TestReplicasClaimingAtOnceNeverShareALiveClaim(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const jobs, replicas = 3, 5
	queued := map[int64]bool{}
	for i := range jobs {
		queued[f.enqueue(t, fmt.Sprintf(`{"partition": %d}`, i))] = true
	}
	sessions := make([]*pgx.Conn, replicas)
	for i := range sessions {
		sessions[i] = f.worker(t)
	}

	// claimAtOnce releases all replicas from one barrier; each claims once.
	claimAtOnce := func() [][]claim {
		got := make([][]claim, replicas)
		errs := make([]error, replicas)
		barrier := make(chan struct{})
		var ready, done sync.WaitGroup
		for i := range replicas {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Done()
				<-barrier
				c, ok, err := claimNext(f.ctx, sessions[i], f.queue, fmt.Sprintf("replica-%d", i))
				errs[i] = err
				if ok {
					got[i] = append(got[i], c)
				}
			}()
		}
		ready.Wait()
		close(barrier)
		done.Wait()
		for i, err := range errs {
			require.NoError(t, err, "replica %d's claim", i)
		}
		return got
	}

	// Round one: more replicas than jobs; then the claimers keep going until
	// the queue is empty (SKIP LOCKED means a loser may see zero rows while a
	// job is still queued).
	owned := map[int64]int{} // job -> replica
	tokens := map[int64]claim{}
	record := func(round [][]claim) {
		for i, cs := range round {
			for _, c := range cs {
				prev, dup := owned[c.JobID]
				require.False(t, dup, "job %d was claimed by replica %d and replica %d", c.JobID, prev, i)
				owned[c.JobID] = i
				tokens[c.JobID] = c
			}
		}
	}
	record(claimAtOnce())
	for range 5 {
		if len(owned) == jobs {
			break
		}
		record(claimAtOnce())
	}
	require.Len(t, owned, jobs, "every queued job was claimed exactly once")
	for id := range owned {
		require.True(t, queued[id], "only queued jobs were claimed")
		require.Equal(t, int64(1), tokens[id].Generation, "one claim per job: fencing generation 1")
	}

	// While the winners renew, past the original expiry, no replica gets a job.
	firstExpiry := tokens[firstKey(tokens)].ExpiresAt
	for _, c := range tokens {
		if c.ExpiresAt.After(firstExpiry) {
			firstExpiry = c.ExpiresAt
		}
	}
	for f.databaseNow(t).Before(firstExpiry.Add(200 * time.Millisecond)) {
		for id, c := range tokens {
			i := owned[id]
			mustRenew(t, f.ctx, sessions[i], id, c.Token, fmt.Sprintf("replica-%d", i), "renewed", "the winner renews its live claim")
		}
		for i, cs := range claimAtOnce() {
			require.Empty(t, cs, "replica %d got a job whose claim is being renewed", i)
		}
		time.Sleep(testRenewalInterval)
	}
	for id := range owned {
		s := f.state(t, id)
		require.Equal(t, int32(1), s.Attempt, "job %d was never reclaimed", id)
		require.Equal(t, int64(1), s.Generation, "job %d kept fencing generation 1", id)
	}
}

func firstKey(m map[int64]claim) int64 {
	for k := range m {
		return k
	}
	return 0
}

// A worker that stops renewing loses its job only after
// the database's clock passes the expiry; then the next claim is attempt 2,
// fencing generation 2, with a new token, and the reclaim is counted.
func TestStoppedRenewalIsReclaimedOnlyAfterDatabaseObservedExpiry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	jobID := f.enqueue(t, `{"extract": "invoices"}`)
	crashed := f.worker(t)
	rescuer := f.worker(t)

	old := mustClaim(t, f.ctx, crashed, f.queue, "worker-crashed")
	require.Equal(t, int32(1), old.Attempt)
	require.Equal(t, int64(1), old.Generation)
	require.True(t, old.DatabaseTime.Add(testLeaseDuration).Equal(old.ExpiresAt), "the lease is the policy's duration from the database's claim time")

	// The crashed worker never renews. The rescuer polls; each empty attempt
	// is bracketed by database time so "before expiry" is the database's view.
	var emptyBeforeExpiry int
	var reclaimed claim
	for {
		c, ok, err := claimNext(f.ctx, rescuer, f.queue, "worker-rescuer")
		require.NoError(t, err)
		if ok {
			reclaimed = c
			break
		}
		if f.databaseNow(t).Before(old.ExpiresAt) {
			emptyBeforeExpiry++
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.GreaterOrEqual(t, emptyBeforeExpiry, 5, "the rescuer tried many times before the expiry and got nothing")
	require.False(t, reclaimed.DatabaseTime.Before(old.ExpiresAt), "the reclaim happened at or after the database-observed expiry")
	require.Equal(t, jobID, reclaimed.JobID)
	require.Equal(t, int32(2), reclaimed.Attempt, "a reclaim uses attempt 2")
	require.Equal(t, int64(2), reclaimed.Generation, "a reclaim raises the fencing generation to 2")
	require.False(t, old.Token == reclaimed.Token, "a reclaim hands out a new token") // never print a token
	require.JSONEq(t, `{"extract": "invoices"}`, string(reclaimed.Payload), "the rescuer gets the payload")
	require.Equal(t, int64(1), f.outcomeTotal(t, f.queue, "reclaim"), "the reclaim is counted once")

	mustRenew(t, f.ctx, crashed, jobID, old.Token, "worker-crashed", "stale", "the crashed worker's token is stale after the reclaim")
	mustRenew(t, f.ctx, rescuer, jobID, reclaimed.Token, "worker-rescuer", "renewed", "the rescuer's claim renews")
}
