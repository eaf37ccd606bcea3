package sqlintegration

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// The fuzz targets call the bundle's functions with arbitrary inputs
// through real PostgreSQL, as the runtime role that may call them. The
// property: the call either answers with a well-formed result or raises
// one of the documented SQLSTATEs LF001 to LF004, never another error, and
// a call that raises changes no row. Inputs PostgreSQL text cannot carry
// (NUL bytes, invalid UTF-8) are not sent: the driver, not the bundle,
// refuses those.

// fuzzQueue is the queue the fuzz fixtures enqueue on.
const fuzzQueue = "fuzz.q"

// fuzzFixture is one fuzz target's database and sessions.
type fuzzFixture struct {
	ctx                       context.Context
	admin, worker, prod, oper *pgx.Conn
	claims                    []fuzzClaim
}

type fuzzClaim struct {
	id    int64
	token pgtype.UUID
	owner string
}

func newFuzzFixture(f *testing.F) *fuzzFixture {
	f.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	db := testdb.New(f)
	fx := &fuzzFixture{ctx: ctx, admin: db.Conn(f), worker: db.LoginConn(f, "durable_job_worker"),
		prod: db.LoginConn(f, "durable_job_producer"), oper: db.LoginConn(f, "durable_job_operator")}
	for _, c := range []*pgx.Conn{fx.admin, fx.worker, fx.prod, fx.oper} {
		if _, err := c.Exec(ctx, `SET statement_timeout = '10s'`); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := fx.admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, interval '1 hour', interval '1 minute', interval '2 hours', true, 'fuzz')`, fuzzQueue); err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := fx.prod.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"n": 1}'::jsonb)`, fuzzQueue); err != nil {
			f.Fatal(err)
		}
	}
	for i := 0; i < 8; i++ {
		var c fuzzClaim
		c.owner = "fuzz-worker"
		if err := fx.worker.QueryRow(ctx, `SELECT job_record_id, lease_claim_token FROM durable_jobs.claim_next_job($1, $2)`,
			fuzzQueue, c.owner).Scan(&c.id, &c.token); err != nil {
			f.Fatal(err)
		}
		fx.claims = append(fx.claims, c)
	}
	return fx
}

// fingerprint digests every row of the bundle's job, payload and policy
// tables.
func (fx *fuzzFixture) fingerprint(t *testing.T) string {
	t.Helper()
	var s string
	err := fx.admin.QueryRow(fx.ctx, `SELECT
	    (SELECT md5(coalesce(string_agg(j::text, '|' ORDER BY j.job_record_id), '')) FROM durable_jobs.job_record j) ||
	    (SELECT md5(coalesce(string_agg(p::text, '|' ORDER BY p.job_record_id), '')) FROM durable_jobs.job_payload_record p) ||
	    (SELECT md5(coalesce(string_agg(q::text, '|' ORDER BY q.queue_name), '')) FROM durable_jobs.queue_lease_policy q)`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// documented reports whether err is a PostgreSQL error with SQLSTATE
// LF001 to LF004, and returns its code.
func documented(err error) (string, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return "", false
	}
	switch pe.Code {
	case "LF001", "LF002", "LF003", "LF004":
		return pe.Code, true
	}
	return pe.Code, false
}

// sendable reports whether every string can be a PostgreSQL text value.
func sendable(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return false
		}
	}
	return true
}

// checkCall applies the property to one call: err is nil (and then check
// judges the answer) or documented, and on error nothing changed.
func (fx *fuzzFixture) checkCall(t *testing.T, what string, before string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	code, ok := documented(err)
	if !ok {
		t.Fatalf("%s: an undocumented error (SQLSTATE %q): %v", what, code, err)
	}
	if after := fx.fingerprint(t); after != before {
		t.Fatalf("%s raised %s but changed rows", what, code)
	}
}

// FuzzWorkerFunctions calls the worker functions (claim_next_jobs,
// renew_job_lease, renew_job_leases, complete_job, retry_job, fail_job,
// release_job_claim) with arbitrary owner ids, queue names, reason codes,
// tokens, ids, delays, batch sizes, arrays and result documents.
func FuzzWorkerFunctions(f *testing.F) {
	fx := newFuzzFixture(f)
	f.Add(uint8(0), "fuzz.q", "fuzz-worker", "done", []byte{}, int64(1), int64(0), int32(1), uint8(1), "{}")
	f.Add(uint8(1), "", "", "", []byte{1, 2, 3}, int64(-1), int64(-5), int32(0), uint8(0), "null")
	f.Add(uint8(2), "Fuzz", "fuzz worker", "Bad Reason", make([]byte, 16), int64(0), int64(1<<40), int32(1001), uint8(3), `{"a":[1,2]}`)
	f.Add(uint8(3), "fuzz.q", "fuzz-worker", "x", []byte{}, int64(3), int64(1000), int32(5), uint8(2), "{}")
	f.Add(uint8(4), "fuzz.q", "fuzz-worker", "target_down", []byte{}, int64(4), int64(30*24*3600*1000+1), int32(5), uint8(4), "{}")
	f.Add(uint8(5), "fuzz.q", "fuzz-worker", "z", []byte{}, int64(5), int64(0), int32(5), uint8(5), "{}")
	f.Add(uint8(6), "fuzz.q", "fuzz-worker", "z", []byte{}, int64(6), int64(0), int32(5), uint8(6), "{}")
	f.Fuzz(func(t *testing.T, op uint8, queue, owner, reason string, tokenBytes []byte, id, delayMs int64,
		n int32, real uint8, result string) {
		if !sendable(queue, owner, reason, result) {
			return
		}
		// real picks one of the fixture's live claims (its id, token and
		// owner) for some calls, so the fuzzer also reaches fenced paths.
		var token pgtype.UUID
		copy(token.Bytes[:], tokenBytes)
		token.Valid = len(tokenBytes) > 0
		isReal := false
		if real > 0 && int(real) <= len(fx.claims) && len(tokenBytes) == 0 {
			c := fx.claims[real-1]
			id, token, owner, isReal = c.id, c.token, c.owner, true
		}
		var doc any
		if json.Valid([]byte(result)) {
			doc = result
		}
		delay := time.Duration(delayMs) * time.Millisecond
		before := fx.fingerprint(t)
		ctx := fx.ctx
		switch op % 7 {
		case 0:
			rows, err := fx.worker.Query(ctx, `SELECT job_record_id, lease_fencing_generation, lease_expires_at, database_time
			    FROM durable_jobs.claim_next_jobs($1, $2, $3)`, queue, owner, n)
			got := 0
			if err == nil {
				for rows.Next() {
					var jid, gen int64
					var exp, dbt time.Time
					if err = rows.Scan(&jid, &gen, &exp, &dbt); err != nil {
						break
					}
					got++
					if jid <= 0 || gen < 1 || !exp.After(dbt) {
						t.Fatalf("claim_next_jobs: malformed row id=%d gen=%d expires=%v at=%v", jid, gen, exp, dbt)
					}
				}
				rows.Close()
				if err == nil {
					err = rows.Err()
				}
			}
			fx.checkCall(t, "claim_next_jobs", before, err)
			if err == nil && int32(got) > n {
				t.Fatalf("claim_next_jobs returned %d rows for p_max_jobs %d", got, n)
			}
		case 1:
			var outcome string
			var exp *time.Time
			var dbt time.Time
			err := fx.worker.QueryRow(ctx, `SELECT renewal_outcome, lease_expires_at, database_time FROM durable_jobs.renew_job_lease($1, $2, $3)`,
				id, token, owner).Scan(&outcome, &exp, &dbt)
			fx.checkCall(t, "renew_job_lease", before, err)
			if err == nil {
				switch {
				case outcome == "renewed" && exp != nil && exp.After(dbt):
				case outcome == "renewal_disabled" && exp != nil:
				case outcome == "stale" && exp == nil:
				default:
					t.Fatalf("renew_job_lease: malformed answer %q expires=%v", outcome, exp)
				}
				if outcome != "stale" && !isReal {
					t.Fatalf("renew_job_lease answered %q for a claim never issued", outcome)
				}
			}
		case 2:
			// Arrays: n ids around id, tokens from tokenBytes (16 bytes each).
			k := int(n % 8)
			if k < 0 {
				k = -k
			}
			ids := make([]int64, k)
			for i := range ids {
				ids[i] = id + int64(i%3) // repeats on purpose
			}
			toks := make([]pgtype.UUID, len(tokenBytes)/16)
			for i := range toks {
				copy(toks[i].Bytes[:], tokenBytes[16*i:])
				toks[i].Valid = true
			}
			rows, err := fx.worker.Query(ctx, `SELECT job_record_id, renewal_outcome FROM durable_jobs.renew_job_leases($1, $2, $3)`,
				owner, ids, toks)
			var got []int64
			if err == nil {
				for rows.Next() {
					var jid int64
					var outcome string
					if err = rows.Scan(&jid, &outcome); err != nil {
						break
					}
					got = append(got, jid)
					if outcome != "stale" {
						t.Fatalf("renew_job_leases answered %q for a claim never issued", outcome)
					}
				}
				rows.Close()
				if err == nil {
					err = rows.Err()
				}
			}
			fx.checkCall(t, "renew_job_leases", before, err)
			if err == nil && len(got) != len(ids) {
				t.Fatalf("renew_job_leases: %d rows for %d claims", len(got), len(ids))
			}
			for i := range got {
				if got[i] != ids[i] {
					t.Fatalf("renew_job_leases: row %d is job %d, want %d (input order)", i, got[i], ids[i])
				}
			}
		case 3:
			_, err := fx.worker.Exec(ctx, sqlCompleteJob, id, token, owner, doc)
			fx.checkCall(t, "complete_job", before, err)
			if err == nil && !isReal {
				t.Fatal("complete_job accepted a claim never issued")
			}
		case 4:
			var status string
			err := fx.worker.QueryRow(ctx, sqlRetryJob, id, token, owner, delay, reason).Scan(&status)
			fx.checkCall(t, "retry_job", before, err)
			if err == nil && ((status != "RETRY_SCHEDULED" && status != "FAILED") || !isReal) {
				t.Fatalf("retry_job answered %q (claim issued: %v)", status, isReal)
			}
		case 5:
			_, err := fx.worker.Exec(ctx, sqlFailJob, id, token, owner, reason)
			fx.checkCall(t, "fail_job", before, err)
			if err == nil && !isReal {
				t.Fatal("fail_job accepted a claim never issued")
			}
		case 6:
			var released bool
			err := fx.worker.QueryRow(ctx, sqlReleaseJobClaim, id, token, owner).Scan(&released)
			fx.checkCall(t, "release_job_claim", before, err)
			if err == nil && released && !isReal {
				t.Fatal("release_job_claim released a claim never issued")
			}
		}
	})
}

// FuzzProducerFunctions calls enqueue_job, cancel_job and
// job_lifecycle_state with arbitrary queues, payloads, keys, attempts and
// ids.
func FuzzProducerFunctions(f *testing.F) {
	fx := newFuzzFixture(f)
	f.Add(uint8(0), "fuzz.q", `{"a": 1}`, "key-1", int32(5), int64(0), int64(1))
	f.Add(uint8(0), "fuzz.q", `[]`, "", int32(0), int64(-3600), int64(0))
	f.Add(uint8(0), "UPPER", `"x"`, strings.Repeat("k", 201), int32(1001), int64(3600), int64(-1))
	f.Add(uint8(1), "", `null`, "", int32(1), int64(0), int64(3))
	f.Add(uint8(2), "", `{}`, "", int32(1), int64(0), int64(9_000_000_000))
	f.Fuzz(func(t *testing.T, op uint8, queue, payload, key string, maxAttempts int32, runAfterSec, id int64) {
		if !sendable(queue, payload, key) {
			return
		}
		var doc, k, runAfter any
		if json.Valid([]byte(payload)) {
			doc = payload
		}
		if key != "" {
			k = key
		}
		if runAfterSec != 0 && runAfterSec > -1e9 && runAfterSec < 1e9 {
			runAfter = time.Now().Add(time.Duration(runAfterSec) * time.Second)
		}
		before := fx.fingerprint(t)
		switch op % 3 {
		case 0:
			var got int64
			err := fx.prod.QueryRow(fx.ctx, `SELECT durable_jobs.enqueue_job($1, $2::jsonb, $3, $4, $5)`,
				queue, doc, k, runAfter, maxAttempts).Scan(&got)
			fx.checkCall(t, "enqueue_job", before, err)
			if err == nil {
				if got <= 0 {
					t.Fatalf("enqueue_job returned id %d", got)
				}
				if k != nil {
					var again int64
					if err := fx.prod.QueryRow(fx.ctx, `SELECT durable_jobs.enqueue_job($1, $2::jsonb, $3, $4, $5)`,
						queue, doc, k, runAfter, maxAttempts).Scan(&again); err != nil || again != got {
						t.Fatalf("a repeated idempotency key gave %d, %v; want %d", again, err, got)
					}
				}
			}
		case 1:
			var ok bool
			err := fx.prod.QueryRow(fx.ctx, `SELECT durable_jobs.cancel_job($1)`, id).Scan(&ok)
			fx.checkCall(t, "cancel_job", before, err)
		case 2:
			rows, err := fx.prod.Query(fx.ctx, `SELECT job_status FROM durable_jobs.job_lifecycle_state($1)`, id)
			n := 0
			if err == nil {
				for rows.Next() {
					n++
				}
				rows.Close()
				err = rows.Err()
			}
			fx.checkCall(t, "job_lifecycle_state", before, err)
			if n > 1 {
				t.Fatalf("job_lifecycle_state returned %d rows", n)
			}
			if after := fx.fingerprint(t); after != before {
				t.Fatal("job_lifecycle_state changed rows")
			}
		}
	})
}

var fuzzQueuePattern = regexp.MustCompile(`^[a-z][a-z0-9_.:-]{0,62}$`)

// FuzzLeasePolicy calls set_queue_lease_policy with arbitrary values and
// requires it to accept exactly the contract's valid policies (LF002 for
// every other one, with nothing changed).
func FuzzLeasePolicy(f *testing.F) {
	fx := newFuzzFixture(f)
	f.Add("fuzz.p", int64(30_000), int64(10_000), int64(86_400_000), true, "reason")
	f.Add("*", int64(1000), int64(333), int64(1000), false, "r")
	f.Add("fuzz.p", int64(999), int64(100), int64(1000), true, "r")
	f.Add("fuzz.p", int64(3000), int64(1001), int64(3000), true, "r")
	f.Add("fuzz.p", int64(3000), int64(99), int64(3000), true, "r")
	f.Add("fuzz.p", int64(3000), int64(1000), int64(7*86_400_000+1), true, "r")
	f.Add("Bad", int64(3000), int64(1000), int64(3000), true, "r")
	f.Add("fuzz.p", int64(3000), int64(1000), int64(3000), true, "   ")
	f.Fuzz(func(t *testing.T, queue string, leaseMs, intervalMs, maxMs int64, enabled bool, reason string) {
		if !sendable(queue, reason) {
			return
		}
		const bound = int64(1) << 40 // milliseconds, about 35 years: a valid interval
		if leaseMs > bound || leaseMs < -bound || intervalMs > bound || intervalMs < -bound || maxMs > bound || maxMs < -bound {
			return
		}
		ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
		before := fx.fingerprint(t)
		_, err := fx.oper.Exec(fx.ctx, `SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, $5, $6)`,
			queue, ms(leaseMs), ms(intervalMs), ms(maxMs), enabled, reason)
		fx.checkCall(t, "set_queue_lease_policy", before, err)
		// The contract's rules, where Go and PostgreSQL agree exactly
		// (ASCII text; the interval bound with a microsecond of slack).
		ascii := true
		for _, r := range queue + reason {
			if r >= 0x80 {
				ascii = false
			}
		}
		if !ascii || len(reason) > 500 || intervalMs*3 == leaseMs {
			return
		}
		valid := (queue == "*" || fuzzQueuePattern.MatchString(queue)) &&
			leaseMs >= 1000 && leaseMs <= 86_400_000 &&
			intervalMs >= 100 && intervalMs*3 <= leaseMs &&
			maxMs >= leaseMs && maxMs <= 7*86_400_000 &&
			strings.TrimLeft(reason, " \t\n\r\v\f") != ""
		code, _ := documented(err)
		if valid && err != nil {
			t.Fatalf("a valid policy was refused with %s", code)
		}
		if !valid && code != "LF002" {
			t.Fatalf("an invalid policy was answered %v, want LF002", err)
		}
	})
}
