package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mightyetl/leasefence/internal/pglocal"
)

// relay is the third host of every campaign URL: a TCP forwarder whose
// target is set when the asynchronous standby exists (until then it
// closes every connection it accepts, and target_session_attrs moves on).
// Clients started before the standby existed find it after its promotion.
type relay struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// startRelay listens on a free port of 127.0.0.1.
func startRelay() (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.acceptLoop()
	return r, nil
}

// port returns the relay's listening port.
func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// setTarget makes new connections go to addr ("host:port").
func (r *relay) setTarget(addr string) {
	r.mu.Lock()
	r.target = addr
	r.mu.Unlock()
}

func (r *relay) acceptLoop() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		target := r.target
		r.mu.Unlock()
		var s net.Conn
		if target != "" {
			s, err = net.DialTimeout("tcp", target, 2*time.Second)
		}
		if target == "" || err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		r.conns[c], r.conns[s] = struct{}{}, struct{}{}
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(c, s)
		go r.pipe(s, c)
	}
}

func (r *relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	r.mu.Lock()
	delete(r.conns, dst)
	delete(r.conns, src)
	r.mu.Unlock()
}

// close stops the relay and cuts its connections.
func (r *relay) close() {
	_ = r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// recordPromotion is the moment between the old primary's death and the
// standby's promotion: it waits until standby has replayed all it
// received, then records a KindPromotion (the standby's clock, detail
// PromotionSync or PromotionAsync) and one KindPromotedState per job with
// the generation the standby holds, which is what the new primary starts
// from. The checker decides from these which acknowledged claims the
// promotion lost.
func (e *env) recordPromotion(ctx context.Context, standby *pglocal.Cluster, detail string) error {
	conn, err := pgx.Connect(ctx, standby.URL("campaign"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The walreceiver may still be writing what it had received when the
	// primary died: replayed == received twice, 200 ms apart.
	caughtUp := 0
	for i := 0; i < 100 && caughtUp < 2; i++ {
		var done bool
		if err := conn.QueryRow(ctx, `SELECT COALESCE(pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(), true)`).Scan(&done); err != nil {
			return err
		}
		if done {
			caughtUp++
		} else {
			caughtUp = 0
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	if caughtUp < 2 {
		return errors.New("campaign: the standby did not replay what it received")
	}
	var now time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT job_record_id, COALESCE(lease_fencing_generation, 0) FROM durable_jobs.job_record`)
	if err != nil {
		return err
	}
	type st struct{ job, gen int64 }
	var state []st
	for rows.Next() {
		var s st
		if err := rows.Scan(&s.job, &s.gen); err != nil {
			return err
		}
		state = append(state, s)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	e.driver.Note(Event{Kind: KindPromotion, DBTime: now, Detail: detail})
	for _, s := range state {
		e.driver.Note(Event{Kind: KindPromotedState, Job: s.job, Gen: s.gen})
	}
	return nil
}

// failoverSync: the primary dies (immediate stop), the synchronous
// standby is promoted; every client finds it through its multi-host URL.
func (e *env) failoverSync(ctx context.Context) (bool, error) {
	if e.standby == nil {
		return false, nil // one failover per campaign: this phase injects nothing
	}
	if err := e.cluster.StopImmediate(); err != nil {
		return false, err
	}
	if err := e.recordPromotion(ctx, e.standby, PromotionSync); err != nil {
		return false, err
	}
	if err := e.standby.Promote(ctx); err != nil {
		return false, err
	}
	e.retired = append(e.retired, e.cluster)
	e.cluster, e.standby = e.standby, nil
	e.admin.Reset()
	e.producer.Reset()
	return true, nil
}

// failoverAsync runs once, after the synchronous failover: an asynchronous
// standby of the current primary (pg_basebackup -R, not named in
// synchronous_standby_names) catches up; every worker is paused; the
// standby's stream is cut (the primary's pg_hba.conf refuses replication,
// its walsenders are ended); on the primary alone the zombie claims a job
// (generation g), lets it expire, reclaims it (g+1) and renews that claim,
// every answer acknowledged; the primary dies and the standby, which saw
// none of it, is promoted. The zombie then claims the job on the new
// primary: its generation must be above g+1 (the checker's
// generation_not_raised_by_promotion and duplicate_generation), and the
// two lost claims are accepted only as lostInPromotion allows. The
// workers are paused so that none of their terminal writes falls into the
// cut (an asynchronous promotion forgets acknowledged completions, which
// the checker does not excuse); they resume after the promotion, past
// their leases.
func (e *env) failoverAsync(ctx context.Context) (bool, error) {
	if e.standby != nil || e.asyncDone || e.relay == nil {
		return false, nil
	}
	e.asyncDone = true
	as, err := e.cluster.StartStandby(ctx, asyncStandbyName)
	if err != nil {
		return false, fmt.Errorf("campaign: start the asynchronous standby: %w", err)
	}
	e.extra = append(e.extra, as)
	e.relay.setTarget("127.0.0.1:" + strconv.Itoa(as.Port()))
	// The standby accepts connections before its walreceiver has
	// connected: wait for it to stream.
	var state string
	for i := 0; i < 200 && state == ""; i++ {
		err := e.admin.QueryRow(ctx, `SELECT sync_state FROM pg_stat_replication WHERE application_name = $1`,
			asyncStandbyName).Scan(&state)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return false, err
		}
		if state == "" {
			sleepCtx(ctx, 50*time.Millisecond)
		}
	}
	if state != "async" {
		return false, fmt.Errorf("campaign: the second standby is %q, not async", state)
	}
	conn, err := e.zombieConn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q := e.zombieQueue("a")
	if _, err := e.enqueueOne(ctx, q); err != nil {
		return false, err
	}
	ws := e.liveWorkers()
	for _, w := range ws {
		_ = w.cmd.Process.Signal(syscall.SIGSTOP)
	}
	defer func() {
		for _, w := range ws {
			_ = w.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	replayCtx, cancelReplay := context.WithTimeout(ctx, 10*time.Second)
	err = as.WaitReplayedFrom(replayCtx, e.cluster)
	cancelReplay()
	if err != nil {
		return false, err
	}
	if err := e.cluster.CutReplication(ctx); err != nil {
		return false, err
	}
	_, ok, err := e.zombieClaim(ctx, conn, q, "zombie-async-1")
	if err != nil || !ok {
		return false, errors.Join(err, errors.New("campaign: the zombie's job was not claimable on the cut primary"))
	}
	sleepCtx(ctx, defaultLease+150*time.Millisecond)
	second, ok, err := e.zombieClaim(ctx, conn, q, "zombie-async-2")
	if err != nil || !ok {
		return false, errors.Join(err, errors.New("campaign: the expired claim was not reclaimed on the cut primary"))
	}
	if err := e.zombieRenew(ctx, conn, second, KindRenew); err != nil {
		return false, err
	}
	_ = conn.Close(ctx)
	if err := e.cluster.StopImmediate(); err != nil {
		return false, err
	}
	if err := e.recordPromotion(ctx, as, PromotionAsync); err != nil {
		return false, err
	}
	if err := as.Promote(ctx); err != nil {
		return false, err
	}
	e.retired = append(e.retired, e.cluster)
	e.cluster = as
	e.extra = e.extra[:len(e.extra)-1]
	e.admin.Reset()
	e.producer.Reset()
	// On the new primary: the job is QUEUED at generation 0 again.
	conn2, err := e.zombieConn(ctx)
	if err != nil {
		return false, err
	}
	defer conn2.Close(context.WithoutCancel(ctx))
	again, ok, err := e.zombieClaim(ctx, conn2, q, "zombie-async-3")
	if err != nil || !ok {
		return false, errors.Join(err, errors.New("campaign: the job lost in the promotion was not claimable on the new primary"))
	}
	return true, e.zombieComplete(ctx, conn2, again)
}
