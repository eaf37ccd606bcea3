package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// hotShare renews 1,000 claims of a queue whose policy is a 3 s lease
// renewed every second, as a heartbeat does (batches of 100, each claim
// once a second), for HOTTime, and the same claims of a plain copy with the
// bare batched UPDATE, which touches no indexed column: that copy is the
// HOT share a renewal had before lease_expiry_floor.
func (r *runner) hotShare(ctx context.Context) error {
	const queue = "bench_hot"
	const claims = 1000
	if err := r.e.setPolicy(ctx, queue, "3 seconds", "1 second"); err != nil {
		return err
	}
	if err := r.e.enqueueJobs(ctx, queue, claims); err != nil {
		return err
	}
	pool, err := newPool(ctx, r.e.workerURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	// A backend sends its table counters a second after its last
	// transaction, or up to ten seconds later when it is idle, or when it
	// exits: end the earlier phases' sessions so that their counters
	// arrive before the first read. The counters are read before the
	// claims, whose 3 s leases would run out while the read waits for them
	// to settle (it waits 1.5 s, or 3 s when a late counter arrives, as on
	// a loaded machine); the claims' own updates, one a claim and none of
	// them HOT (a claim changes job_status, in the partial indexes'
	// predicates), are taken out below. The claims are made on the
	// renewals' pool, which is closed before the counters are read again,
	// so that their counters arrive too.
	r.e.worker.Reset()
	countersRead := time.Now()
	before, err := r.e.stableCounters(ctx)
	r.measuring(countersRead)
	if err != nil {
		return err
	}
	set, err := (&dbPools{admin: r.e.admin, worker: pool}).claimDue(ctx, queue, claims)
	if err != nil {
		return err
	}
	claimed := time.Now()
	if err := r.e.copyRecords(ctx, "bench_raw_hot", queue); err != nil {
		return err
	}
	rawSQL := strings.ReplaceAll(strings.ReplaceAll(rawBatchSQL, "bench_raw_renew", "bench_raw_hot"),
		"3600 seconds", "3 seconds")
	// The first renewals 2 s after the claims, as when the counters were
	// read between them: when the floor moves (within a sixth of the
	// lease, 0.5 s, of the decision time) depends on when the renewals
	// fall against the claims, and renewed at once it moved every fourth
	// renewal instead of every third (75 % HOT against 57 to 65 %). Alone
	// (-steps 'HOT share') this gives what the step gave before, 5,154 HOT
	// updates of 9,000 and 7,714 of the copy's.
	renewing := time.Now()
	defer r.measuring(renewing)
	time.Sleep(time.Until(claimed.Add(2 * time.Second)))
	var ours, bare int64
	stop := time.Now().Add(r.cfg.HOTTime)
	for time.Now().Before(stop) {
		tick := time.Now()
		for lo := 0; lo < claims; lo += batchSize {
			rows, err := pool.Query(ctx, sqlRenewBatch,
				benchOwner, set.ids[lo:lo+batchSize], set.tokens[lo:lo+batchSize])
			if err != nil {
				return err
			}
			outcomes, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, o := range outcomes {
				if o != "renewed" {
					return fmt.Errorf("a claim renewed every second under a 3 s lease was %s", o)
				}
			}
			ours += int64(len(outcomes))
			tag, err := pool.Exec(ctx, rawSQL, set.ids[lo:lo+batchSize], set.tokens[lo:lo+batchSize], benchOwner)
			if err != nil {
				return err
			}
			bare += tag.RowsAffected()
		}
		time.Sleep(time.Until(tick.Add(time.Second)))
	}
	// A backend sends its table counters when it ends: close the pool, then
	// read them once they stop changing, and subtract what came before.
	pool.Close()
	after, err := r.e.stableCounters(ctx)
	if err != nil {
		return err
	}
	for _, t := range []struct {
		table, what string
		n, claims   int64
	}{
		{"job_record", "renew_job_leases (lease_expiry_floor moved when within a sixth of the lease)", ours, claims},
		{"bench_raw_hot", "bare batched UPDATE of a copy (no indexed column changes: the share before)", bare, 0},
	} {
		h := HOTShare{Table: t.table, What: t.what, Renewals: t.n,
			Updates: after[t.table][0] - before[t.table][0] - t.claims, HOT: after[t.table][1] - before[t.table][1]}
		if h.Updates > 0 {
			h.Share = float64(h.HOT) / float64(h.Updates)
		}
		r.cfg.Logf("bench: HOT share %s: %d of %d updates (%.1f%%)", t.table, h.HOT, h.Updates, 100*h.Share)
		r.rep.HOT = append(r.rep.HOT, h)
	}
	return nil
}

// stableCounters reads n_tup_upd and n_tup_hot_upd of job_record and
// bench_raw_hot once two reads a second and a half apart agree: backends
// send their counters a second or so after their last transaction, so a
// read right after a phase may miss some.
func (e *env) stableCounters(ctx context.Context) (map[string][2]int64, error) {
	read := func() (map[string][2]int64, error) {
		rows, err := e.admin.Query(ctx, `SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE relname IN ('job_record', 'bench_raw_hot')`)
		if err != nil {
			return nil, err
		}
		m := map[string][2]int64{}
		for rows.Next() {
			var name string
			var upd, hot int64
			if err := rows.Scan(&name, &upd, &hot); err != nil {
				rows.Close()
				return nil, err
			}
			m[name] = [2]int64{upd, hot}
		}
		return m, rows.Err()
	}
	prev, err := read()
	if err != nil {
		return nil, err
	}
	for i := 0; i < 20; i++ {
		time.Sleep(1500 * time.Millisecond)
		cur, err := read()
		if err != nil {
			return nil, err
		}
		if cur["job_record"] == prev["job_record"] && cur["bench_raw_hot"] == prev["bench_raw_hot"] {
			return cur, nil
		}
		prev = cur
	}
	return nil, fmt.Errorf("table counters still changing after 30 s")
}

// profile runs each function for a moment with pg_stat_statements
// tracking nested statements (for the worker login only; they are recorded
// under the definer role they run as) and records where the server time
// goes, statement by statement.
func (r *runner) profile(ctx context.Context) error {
	if _, err := r.e.admin.Exec(ctx, `ALTER ROLE `+pgx.Identifier{r.e.workerRole}.Sanitize()+
		` SET pg_stat_statements.track = 'all'`); err != nil {
		return err
	}
	pool, err := newPool(ctx, r.e.workerURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	const queue = "bench_profile"
	if err := r.e.setPolicy(ctx, queue, "1 hour", "10 minutes"); err != nil {
		return err
	}
	set, err := r.e.claimJobs(ctx, queue, 1000)
	if err != nil {
		return err
	}
	if err := r.e.insertDueJobs(ctx, queue, 20000); err != nil {
		return err
	}
	phases := []struct {
		name string
		op   func(ctx context.Context, i int) error
	}{
		{"renew_job_lease", func(ctx context.Context, i int) error {
			var o string
			return pool.QueryRow(ctx, sqlRenewOne,
				set.ids[i%1000], set.tokens[i%1000], benchOwner).Scan(&o)
		}},
		{"renew_job_leases", func(ctx context.Context, i int) error {
			lo := (i % 10) * batchSize
			rows, err := pool.Query(ctx, sqlRenewBatch,
				benchOwner, set.ids[lo:lo+batchSize], set.tokens[lo:lo+batchSize])
			if err != nil {
				return err
			}
			_, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		}},
		{"claim_next_job", func(ctx context.Context, i int) error {
			var id int64
			return pool.QueryRow(ctx, sqlClaimOne, queue, benchOwner).Scan(&id)
		}},
	}
	d := max(r.cfg.CaseTime/6, 300*time.Millisecond)
	for _, p := range phases {
		r.measured += d
		if _, err := r.e.admin.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
			return err
		}
		for i, stop := 0, time.Now().Add(d); time.Now().Before(stop); i++ {
			if err := p.op(ctx, i); err != nil {
				return fmt.Errorf("profile %s: %w", p.name, err)
			}
		}
		rows, err := r.e.admin.Query(ctx, `SELECT regexp_replace(query, '\s+', ' ', 'g'), calls,
				total_exec_time * 1000 / calls, total_exec_time / sum(total_exec_time) FILTER (WHERE toplevel) OVER ()
			FROM pg_stat_statements s
			WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND s.query NOT LIKE '%pg_stat_statements%' AND s.calls > 1
			ORDER BY total_exec_time DESC LIMIT 12`)
		if err != nil {
			return err
		}
		for rows.Next() {
			l := ProfileLine{Phase: p.name}
			if err := rows.Scan(&l.Query, &l.Calls, &l.MeanUS, &l.Share); err != nil {
				rows.Close()
				return err
			}
			if len(l.Query) > 160 {
				l.Query = l.Query[:157] + "..."
			}
			r.rep.Profile = append(r.rep.Profile, l)
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// MachineFacts describe where a run ran.
type MachineFacts struct {
	// CPU is the processor model.
	CPU string `json:"cpu"`
	// Cores is the number of CPUs Go sees.
	Cores int `json:"cores"`
	// Kernel is uname -sr.
	Kernel string `json:"kernel"`
	// GoVersion is the Go release.
	GoVersion string `json:"go"`
	// PostgreSQL is the server's version.
	PostgreSQL string `json:"postgresql"`
	// Settings are the durability and memory settings of the server.
	Settings string `json:"settings"`
	// LoadBefore is the load average when the run began.
	LoadBefore string `json:"load_before"`
	// LoadAfter is the load average when it ended.
	LoadAfter string `json:"load_after"`
}

var cpuModel = regexp.MustCompile(`(?m)^model name\s*:\s*(.*)$`)

func machineFacts() MachineFacts {
	m := MachineFacts{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if s := cpuModel.FindSubmatch(b); s != nil {
			m.CPU = strings.TrimSpace(string(s[1]))
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	return m
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (e *env) serverFacts(ctx context.Context, m *MachineFacts) error {
	return e.admin.QueryRow(ctx, `SELECT current_setting('server_version'),
		string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings
		WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'wal_level')`).
		Scan(&m.PostgreSQL, &m.Settings)
}
