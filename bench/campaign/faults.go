package campaign

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mightyetl/leasefence/internal/faultproxy"
)

// inject runs one fault of kind and waits until it is over.
func (e *env) inject(ctx context.Context, kind string) error {
	switch kind {
	case FaultProxyCut:
		e.eachProxy(func(p *faultproxy.Proxy) { p.Cut() })
	case FaultProxyBlackhole:
		e.eachProxy(func(p *faultproxy.Proxy) { p.SetMode(faultproxy.Blackhole) })
		sleepCtx(ctx, 1500*time.Millisecond)
		e.eachProxy(func(p *faultproxy.Proxy) { p.SetMode(faultproxy.Open) })
	case FaultProxyDelay:
		e.eachProxy(func(p *faultproxy.Proxy) { p.SetDelay(300 * time.Millisecond); p.SetMode(faultproxy.Delay) })
		sleepCtx(ctx, 2*time.Second)
		e.eachProxy(func(p *faultproxy.Proxy) { p.SetMode(faultproxy.Open) })
	case FaultProxyDropReply:
		// Requests still reach the server, which commits; the answers
		// are lost (the case a client must not count as a success).
		e.eachProxy(func(p *faultproxy.Proxy) { p.SetMode(faultproxy.DropReplies) })
		sleepCtx(ctx, 400*time.Millisecond+time.Duration(e.rng.Int64N(int64(600*time.Millisecond))))
		e.eachProxy(func(p *faultproxy.Proxy) { p.SetMode(faultproxy.Open) })
	case FaultFailover, FaultFailoverAsync:
		run := e.failoverSync
		if kind == FaultFailoverAsync {
			run = e.failoverAsync
		}
		ran, err := run(ctx)
		if err != nil || !ran {
			return err
		}
	case FaultSIGSTOP:
		ws := e.liveWorkers()
		if len(ws) == 0 {
			return nil
		}
		w := ws[e.rng.IntN(len(ws))]
		_ = w.cmd.Process.Signal(syscall.SIGSTOP)
		sleepCtx(ctx, defaultLease+time.Duration(e.rng.Int64N(int64(defaultLease))))
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
	case FaultSIGKILL:
		ws := e.liveWorkers()
		if len(ws) == 0 {
			return nil
		}
		w := ws[e.rng.IntN(len(ws))]
		_ = w.cmd.Process.Kill()
		<-w.done
		if err := e.startWorker(); err != nil {
			return err
		}
	case FaultTerminate:
		if _, err := e.admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		    WHERE usename = $1 AND pid <> pg_backend_pid()`, workerLogin); err != nil {
			return err
		}
	case FaultRestartImmed:
		if err := e.cluster.RestartImmediate(ctx); err != nil {
			return err
		}
		e.admin.Reset()
		e.producer.Reset()
	case FaultRowLock:
		if err := e.rowLock(ctx); err != nil {
			return err
		}
	case FaultCancelInTx:
		if err := e.cancelInTx(ctx); err != nil {
			return err
		}
	case FaultZombie:
		if err := e.zombieReplay(ctx); err != nil {
			return err
		}
	case FaultForged:
		if err := e.forged(ctx); err != nil {
			return err
		}
	case FaultDBClockJump:
		// The database clock steps forward 3 s (every lease ends early in
		// real time, while its holder may still trust it) or back 2 s.
		step := 3 * time.Second
		if e.clock.offset > 0 && e.rng.IntN(2) == 0 {
			step = -2 * time.Second
		}
		e.driver.Note(Event{Kind: KindClockStep, Detail: step.String()})
		if err := e.clock.set(e.clock.offset + step); err != nil {
			return err
		}
		e.jumped = true
		if err := e.waitDBClockOffset(ctx, e.clock.offset); err != nil {
			return err
		}
		sleepCtx(ctx, time.Second)
	case FaultEarlyReclaim:
		if err := e.earlyReclaim(ctx); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown fault kind %q", kind)
	}
	e.count(kind)
	return nil
}

// eachProxy applies f to every proxy.
func (e *env) eachProxy(f func(*faultproxy.Proxy)) {
	for _, p := range e.proxies {
		f(p)
	}
}

// watchBlocked polls, for d, the sessions that wait on pid's locks, and
// records each claim_next_job or renew_job_leases call among them once.
// jobs maps a function name to the locked job its call would wait on.
func (e *env) watchBlocked(ctx context.Context, pid int32, jobs map[string]int64, d time.Duration) {
	seen := map[string]bool{}
	end := time.Now().Add(d)
	for i := 0; i < 200 && time.Now().Before(end); i++ {
		rows, err := e.admin.Query(ctx, `SELECT query FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))`, pid)
		if err == nil {
			for rows.Next() {
				var q string
				if rows.Scan(&q) != nil {
					continue
				}
				// Only the function name is kept: no SQL text reaches the history.
				for _, fn := range []string{"claim_next_job", "renew_job_leases"} {
					if strings.Contains(q, fn) && !seen[fn] {
						seen[fn] = true
						e.driver.Note(Event{Kind: KindLockWait, Job: jobs[fn], Detail: fn})
					}
				}
			}
			rows.Close()
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// rowLock holds, as superuser, the row locks of one queued and one
// running job of the main queue for 1.2 s, as a long transaction would.
func (e *env) rowLock(ctx context.Context) error {
	conn, err := e.admin.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	jobs := map[string]int64{}
	for fn, status := range map[string]string{"claim_next_job": "QUEUED", "renew_job_leases": "RUNNING"} {
		var id int64
		err := tx.QueryRow(ctx, `SELECT job_record_id FROM durable_jobs.job_record
		    WHERE queue_name = $1 AND job_status = $2::durable_jobs.job_status_kind
		    ORDER BY job_record_id LIMIT 1 FOR UPDATE SKIP LOCKED`, mainQueue, status).Scan(&id)
		if err == nil {
			jobs[fn] = id
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
	}
	var pid int32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return err
	}
	e.watchBlocked(ctx, pid, jobs, 1200*time.Millisecond)
	return nil
}

// cancelInTx cancels a running job in a producer transaction that stays
// open for a second and then rolls back: the job's row is locked, nothing
// changes.
func (e *env) cancelInTx(ctx context.Context) error {
	var id int64
	err := e.admin.QueryRow(ctx, `SELECT job_record_id FROM durable_jobs.job_record
	    WHERE queue_name = $1 AND job_status = 'RUNNING' ORDER BY random() LIMIT 1`, mainQueue).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	conn, err := e.producer.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var pid int32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return err
	}
	var cancelled bool
	if err := tx.QueryRow(ctx, `SELECT durable_jobs.cancel_job($1)`, id).Scan(&cancelled); err != nil {
		return err
	}
	e.watchBlocked(ctx, pid, map[string]int64{"renew_job_leases": id}, time.Second)
	return nil
}

// zclaim is a claim the zombie holds with raw SQL, outside goclient.
type zclaim struct {
	job, gen int64
	token    pgtype.UUID
	owner    string
	expires  time.Time
}

// zombieClaim claims one job of queue as owner and records it.
func (e *env) zombieClaim(ctx context.Context, conn *pgx.Conn, queue, owner string) (zclaim, bool, error) {
	op := e.zombie.Invoke(KindClaim, 0, 0)
	var c zclaim
	var dbTime time.Time
	err := conn.QueryRow(ctx, `SELECT job_record_id, lease_claim_token, lease_fencing_generation, lease_expires_at, database_time
	    FROM durable_jobs.claim_next_job($1, $2)`, queue, owner).Scan(&c.job, &c.token, &c.gen, &c.expires, &dbTime)
	if errors.Is(err, pgx.ErrNoRows) {
		e.zombie.Done(op, Event{Kind: KindClaim, Outcome: OutNone})
		return c, false, nil
	}
	if err != nil {
		e.zombie.Done(op, Event{Kind: KindClaim, Outcome: OutUnknown})
		return c, false, err
	}
	c.owner = owner
	e.zombie.Done(op, Event{Kind: KindClaim, Job: c.job, Gen: c.gen, Outcome: OutOK, DBTime: dbTime, Expires: c.expires})
	return c, true, nil
}

// zombieRenew renews c (kind KindRenew, or KindForgedRenew with a random
// token) and records the answer.
func (e *env) zombieRenew(ctx context.Context, conn *pgx.Conn, c zclaim, kind string) error {
	token := c.token
	if kind == KindForgedRenew {
		_, _ = rand.Read(token.Bytes[:])
	}
	op := e.zombie.Invoke(kind, c.job, c.gen)
	var outcome string
	var expires *time.Time
	var dbTime time.Time
	err := conn.QueryRow(ctx, `SELECT renewal_outcome, lease_expires_at, database_time FROM durable_jobs.renew_job_lease($1, $2, $3)`,
		c.job, token, c.owner).Scan(&outcome, &expires, &dbTime)
	if err != nil {
		e.zombie.Done(op, Event{Kind: kind, Outcome: OutUnknown})
		return err
	}
	ev := Event{Kind: kind, Job: c.job, Gen: c.gen, Outcome: outcome, DBTime: dbTime}
	if expires != nil {
		ev.Expires = *expires
	}
	e.zombie.Done(op, ev)
	return nil
}

// zombieComplete writes the target row and completes c in one
// transaction, as a worker that ignores its own lease would.
func (e *env) zombieComplete(ctx context.Context, conn *pgx.Conn, c zclaim) error {
	op := e.zombie.Invoke(KindComplete, c.job, c.gen)
	ev := Event{Kind: KindComplete, Job: c.job, Gen: c.gen, Outcome: OutAborted}
	defer func() { e.zombie.Done(op, ev) }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&ev.DBTime); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO campaign.target_effect (job_id, generation) VALUES ($1, $2)`, c.job, c.gen); err != nil {
		return err
	}
	ev.Outcome = OutUnknown
	if _, err := tx.Exec(ctx, `SELECT durable_jobs.complete_job($1, $2, $3, NULL)`, c.job, c.token, c.owner); err != nil {
		var code string
		if pe := pgErrCode(err); pe != "" {
			code = pe
		}
		if code == "LF001" {
			ev.Outcome = OutStale
			return nil
		}
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	ev.Outcome = OutOK
	return nil
}

// zombieConn connects as the workers' login, directly (no proxy).
func (e *env) zombieConn(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, e.workerURL)
}

// zombieRound returns a fresh queue name for one zombie scenario.
func (e *env) zombieQueue(prefix string) string {
	e.faultsMu.Lock()
	n := e.faults[prefix] + 1
	e.faultsMu.Unlock()
	return fmt.Sprintf("zombie.%s%d.%d", prefix, n, e.rng.IntN(1_000_000))
}

// zombieReplay: a claim expires and is reclaimed by another owner; the
// old claimant then renews and completes with its old token. Then, on a
// second job, a claim that has expired but is not reclaimed renews and
// completes late.
func (e *env) zombieReplay(ctx context.Context) error {
	conn, err := e.zombieConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q := e.zombieQueue("r")
	if _, err := e.enqueueOne(ctx, q); err != nil {
		return err
	}
	old, ok, err := e.zombieClaim(ctx, conn, q, "zombie-old")
	if err != nil || !ok {
		return err
	}
	sleepCtx(ctx, defaultLease+150*time.Millisecond)
	cur, ok, err := e.zombieClaim(ctx, conn, q, "zombie-new")
	if err != nil {
		return err
	}
	if err := e.zombieRenew(ctx, conn, old, KindRenew); err != nil {
		return err
	}
	if err := e.zombieComplete(ctx, conn, old); err != nil {
		return err
	}
	if ok {
		if err := e.zombieComplete(ctx, conn, cur); err != nil {
			return err
		}
	}
	// Expired, not reclaimed: renew and complete late.
	q2 := e.zombieQueue("l")
	if _, err := e.enqueueOne(ctx, q2); err != nil {
		return err
	}
	late, ok, err := e.zombieClaim(ctx, conn, q2, "zombie-late")
	if err != nil || !ok {
		return err
	}
	sleepCtx(ctx, defaultLease+150*time.Millisecond)
	if err := e.zombieRenew(ctx, conn, late, KindRenew); err != nil {
		return err
	}
	return e.zombieComplete(ctx, conn, late)
}

// forged presents the live claim's job and owner with a random token.
func (e *env) forged(ctx context.Context) error {
	conn, err := e.zombieConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q := e.zombieQueue("f")
	if _, err := e.enqueueOne(ctx, q); err != nil {
		return err
	}
	c, ok, err := e.zombieClaim(ctx, conn, q, "zombie-forged")
	if err != nil || !ok {
		return err
	}
	if err := e.zombieRenew(ctx, conn, c, KindForgedRenew); err != nil {
		return err
	}
	return e.zombieComplete(ctx, conn, c)
}

// earlyReclaim claims a job and at once tries to claim it again as
// another owner, long before its lease runs out.
func (e *env) earlyReclaim(ctx context.Context) error {
	conn, err := e.zombieConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q := e.zombieQueue("e")
	if _, err := e.enqueueOne(ctx, q); err != nil {
		return err
	}
	first, ok, err := e.zombieClaim(ctx, conn, q, "zombie-first")
	if err != nil || !ok {
		return err
	}
	second, ok, err := e.zombieClaim(ctx, conn, q, "zombie-second")
	if err != nil {
		return err
	}
	if ok {
		return e.zombieComplete(ctx, conn, second)
	}
	return e.zombieComplete(ctx, conn, first)
}

// waitDBClockOffset waits (up to 5 s) until the database's clock_timestamp()
// is offset from this process's clock by want, give or take 500 ms: proof
// that the jump took effect.
func (e *env) waitDBClockOffset(ctx context.Context, want time.Duration) error {
	var last time.Duration
	for i := 0; i < 50; i++ {
		var db time.Time
		before := time.Now()
		if err := e.admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
			return err
		}
		last = db.Sub(before) - want
		if last > -500*time.Millisecond && last < 500*time.Millisecond {
			return nil
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return fmt.Errorf("libfaketime did not move the database clock to %s (off by %s)", want, last)
}
