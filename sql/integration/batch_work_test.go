package sqlintegration

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// The batch calls read rows in proportion to their claims, never to the
// square of them. Until migration 020, renew_job_leases answered through a
// nested loop that read every renewed row once per claim in (n x n rows a
// call: 72 to 93 ms for 1,000 claims against 19 ms since) and its UPDATE
// tested each row's job id against an array of n ids. Time is not asserted
// (benchmarks measure it); the plans PostgreSQL ran are: the session runs
// with auto_explain (JSON plans, actual row counts, nested statements)
// and every statement of every call is checked.

// planNode is the part of an auto_explain JSON plan node the checks read.
type planNode struct {
	NodeType    string     `json:"Node Type"`
	ActualRows  float64    `json:"Actual Rows"`
	ActualLoops float64    `json:"Actual Loops"`
	Filter      string     `json:"Filter"`
	JoinFilter  string     `json:"Join Filter"`
	Plans       []planNode `json:"Plans"`
}

// explainedStatement is one statement auto_explain logged.
type explainedStatement struct {
	QueryText string   `json:"Query Text"`
	Plan      planNode `json:"Plan"`
}

// rowsRead is the sum over the plan's nodes of the rows each returned in
// all its loops.
func (n planNode) rowsRead() float64 {
	total := n.ActualRows * n.ActualLoops
	for _, c := range n.Plans {
		total += c.rowsRead()
	}
	return total
}

// filters returns every Filter and Join Filter of the plan.
func (n planNode) filters() []string {
	var out []string
	for _, f := range []string{n.Filter, n.JoinFilter} {
		if f != "" {
			out = append(out, f)
		}
	}
	for _, c := range n.Plans {
		out = append(out, c.filters()...)
	}
	return out
}

// explainedWorker opens a session as a new worker login whose every
// statement, nested ones included, is logged to it by auto_explain with
// its plan and actual row counts; plans returns (and forgets) those logged
// so far.
func explainedWorker(t *testing.T, f *fixture) (conn *pgx.Conn, plans func() []explainedStatement) {
	t.Helper()
	url := f.workerURL(t)
	role := pgx.Identifier{loginRole(t, url)}.Sanitize()
	for _, setting := range []string{
		"session_preload_libraries = 'auto_explain'",
		"auto_explain.log_min_duration = 0",
		"auto_explain.log_analyze = on",
		"auto_explain.log_timing = off",
		"auto_explain.log_nested_statements = on",
		"auto_explain.log_format = json",
		"client_min_messages = log",
	} {
		_, err := f.admin.Exec(f.ctx, "ALTER ROLE "+role+" SET "+setting)
		require.NoError(t, err, setting)
	}
	var mu sync.Mutex
	var logged []explainedStatement
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["statement_timeout"] = "10s"
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		_, plan, ok := strings.Cut(n.Message, "plan:\n")
		if n.Severity != "LOG" || !ok {
			return
		}
		var s explainedStatement
		if json.Unmarshal([]byte(plan), &s) != nil {
			return
		}
		mu.Lock()
		logged = append(logged, s)
		mu.Unlock()
	}
	conn, err = pgx.ConnectConfig(f.ctx, cfg)
	require.NoError(t, err, "connect the explained worker session")
	t.Cleanup(func() { _ = conn.Close(f.ctx) })
	return conn, func() []explainedStatement {
		mu.Lock()
		defer mu.Unlock()
		out := logged
		logged = nil
		return out
	}
}

// requireLinearWork checks every statement a call ran: no plan reads more
// than perClaim rows per claim, and (when noArrayFilter) no filter tests a
// row's job id against an array (= ANY), whose cost is the array's length
// per row. (A tuple-id array is no such cost: it is what a TID scan reads
// by; on a table of a few pages the planner may scan it instead.)
func requireLinearWork(t *testing.T, call string, plans []explainedStatement, claims int, perClaim float64, noArrayFilter bool) {
	t.Helper()
	require.NotEmpty(t, plans, "%s: auto_explain logged its statements", call)
	for _, s := range plans {
		query := strings.Join(strings.Fields(s.QueryText), " ")
		if len(query) > 100 {
			query = query[:100]
		}
		read := s.Plan.rowsRead()
		require.LessOrEqual(t, read, perClaim*float64(claims),
			"%s: %q read %.0f rows for %d claims", call, query, read, claims)
		if noArrayFilter {
			for _, filter := range s.Plan.filters() {
				require.False(t, strings.Contains(filter, "job_record_id = ANY"),
					"%s: %q tests each row's job id against an array", call, query)
			}
		}
	}
}

func TestBatchCallsReadRowsLinearInTheirClaims(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Leases long enough that no claim expires while the calls are logged.
	f.setPolicy(t, f.queue, time.Minute, 20*time.Second, time.Hour, true)
	const claims = 300
	payloads := make([]string, claims)
	for i := range payloads {
		payloads[i] = fmt.Sprintf(`{"n": %d}`, i)
	}
	_, err := f.admin.Exec(f.ctx, "SELECT durable_jobs.enqueue_jobs($1, $2::jsonb[])", f.queue, payloads)
	require.NoError(t, err)

	worker, plans := explainedWorker(t, f)
	claimed := claimMany(t, f, worker, "worker-b", claims)
	require.Len(t, claimed, claims)
	ids := make([]int64, claims)
	tokens := make([]pgtype.UUID, claims)
	for i, c := range claimed {
		ids[i], tokens[i] = c.JobID, c.Token
	}
	plans()

	// Seven calls: the first five run custom plans, the later ones the
	// generic plan PostgreSQL then keeps for the session.
	for call := 1; call <= 7; call++ {
		rows, err := worker.Query(f.ctx, "SELECT renewal_outcome FROM durable_jobs.renew_job_leases($1, $2, $3)",
			"worker-b", ids, tokens)
		require.NoError(t, err)
		outcomes, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Len(t, outcomes, claims)
		for _, o := range outcomes {
			require.Equal(t, "renewed", o, "renewal call %d", call)
		}
		requireLinearWork(t, fmt.Sprintf("renew_job_leases call %d", call), plans(), claims, 20, true)
	}

	// complete_jobs of the same claims, once (it completes them): its
	// joins read rows in proportion to its claims too.
	rows, err := worker.Query(f.ctx, "SELECT job_status FROM durable_jobs.complete_jobs($1, $2, $3)",
		"worker-b", ids, tokens)
	require.NoError(t, err)
	statuses, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, statuses, claims)
	requireLinearWork(t, "complete_jobs", plans(), claims, 20, false)
}
