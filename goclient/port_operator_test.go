package goclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// The operator's job views list, page and show jobs without payloads; a
// cancel or replay with a change record lands in the job's action trail;
// an erasure clears a finished job's payload once.
func TestOperatorJobViewsActionsAndErasure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	producerPool := db.LoginPool(t, "durable_job_producer")
	producer, err := goclient.NewClient(producerPool, goclient.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, producer.Close()) })
	operator := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	var ids []int64
	for range 2 {
		id, err := producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.ops", Payload: []byte(`{"secret": "pii"}`)})
		require.NoError(t, err)
		ids = append(ids, id)
	}

	jobs, err := operator.Jobs(ctx, goclient.JobFilter{Queue: "etl.ops", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []int64{ids[1], ids[0]}, []int64{jobs[0].ID, jobs[1].ID}, "newest first")
	require.Equal(t, "QUEUED", jobs[0].Status)
	older, err := operator.Jobs(ctx, goclient.JobFilter{After: ids[1], Limit: 10})
	require.NoError(t, err)
	require.Len(t, older, 1)
	require.Equal(t, ids[0], older[0].ID)
	none, err := operator.Jobs(ctx, goclient.JobFilter{Status: "CANCELLED", Limit: 10})
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = operator.Jobs(ctx, goclient.JobFilter{Limit: 0})
	require.Error(t, err, "a page of no jobs is refused")

	cancelled, err := operator.Cancel(ctx, ids[0], goclient.ChangeRecord{Reason: "stop the run", Ticket: "OPS-1"})
	require.NoError(t, err)
	require.True(t, cancelled)
	job, err := operator.Job(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, "CANCELLED", job.Status)
	replayed, err := operator.Replay(ctx, ids[0], goclient.ChangeRecord{Reason: "run it again"})
	require.NoError(t, err)
	require.True(t, replayed)
	actions, err := operator.JobActions(ctx, ids[0])
	require.NoError(t, err)
	require.Len(t, actions, 2)
	require.Equal(t, "stop the run", *actions[0].Reason)
	require.Equal(t, "OPS-1", *actions[0].Ticket)
	require.Nil(t, actions[1].Ticket)

	_, err = operator.Job(ctx, ids[1]+1000)
	require.ErrorIs(t, err, goclient.ErrJobNotFound)
	_, err = adminClient(t, db.LoginPool(t, "durable_job_worker")).Job(ctx, ids[0])
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)

	_, err = operator.Cancel(ctx, ids[1], goclient.ChangeRecord{Reason: "finish it"})
	require.NoError(t, err)
	erase := goclient.ChangeRecord{Reason: "erasure request", Ticket: "DSR-7"}
	erased, err := operator.ErasePayload(ctx, ids[1], erase)
	require.NoError(t, err)
	require.True(t, erased)
	erased, err = operator.ErasePayload(ctx, ids[1], erase)
	require.NoError(t, err)
	require.False(t, erased, "already erased")
}

// Retention policies are set and read back as durations; an interval whose
// parts do not make a plain duration comes with its stored text; a purge
// batch with nothing expired purges nothing.
func TestRetentionPoliciesAndPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	operator := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	require.NoError(t, operator.SetRetentionPolicy(ctx, "etl.ret", 2*time.Hour, 48*time.Hour,
		goclient.ChangeRecord{Reason: "shorter retention", Ticket: "OPS-2"}))
	require.ErrorIs(t, operator.SetRetentionPolicy(ctx, "etl.ret", time.Minute, 48*time.Hour,
		goclient.ChangeRecord{Reason: "too short"}), goclient.ErrInvalidPolicy)
	_, err := db.Pool(t).Exec(ctx, `INSERT INTO durable_jobs.queue_retention_policy
		(queue_name, payload_retention, record_retention, changed_at, changed_by_role)
		VALUES ('old.row', '1 day -1 hour', '-1 year 361 days', clock_timestamp(), 'someone')`)
	require.NoError(t, err)

	policies, err := operator.RetentionPolicies(ctx)
	require.NoError(t, err)
	byQueue := map[string]goclient.RetentionPolicy{}
	for _, p := range policies {
		byQueue[p.Queue] = p
	}
	set := byQueue["etl.ret"]
	require.Equal(t, []time.Duration{2 * time.Hour, 48 * time.Hour}, []time.Duration{set.PayloadRetention, set.RecordRetention})
	require.Empty(t, set.PayloadRetentionText+set.RecordRetentionText)
	old := byQueue["old.row"]
	require.Equal(t, "1 day -01:00:00", old.PayloadRetentionText)
	require.Equal(t, "-1 years +361 days", old.RecordRetentionText)
	require.Equal(t, 23*time.Hour, old.PayloadRetention)
	require.Equal(t, 24*time.Hour, old.RecordRetention, "a month counts 30 days")

	purged, err := operator.PurgeExpired(ctx, 100)
	require.NoError(t, err)
	require.Empty(t, purged)
}

// Change control: each setting changes alone or with others in one
// transaction, a refused one changes nothing, and maker-checker proposals
// are approved by another login or rejected.
func TestChangeControlAndProposals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	maker := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	checker := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	record := func(reason string) goclient.ChangeRecord { return goclient.ChangeRecord{Reason: reason} }
	ptr := func(s string) *string { return &s }

	before, err := maker.ChangeControl(ctx)
	require.NoError(t, err)
	require.Empty(t, before.ReasonPattern, "free text")
	written, err := maker.SetChangeControl(ctx, goclient.ChangeControlUpdate{ReasonPattern: ptr(`^OPS-[0-9]+: .+$`)},
		record("structured reasons"))
	require.NoError(t, err)
	require.Equal(t, `^OPS-[0-9]+: .+$`, written.ReasonPattern)
	require.Equal(t, before.TicketPattern, written.TicketPattern, "kept")
	yes := true
	written, err = maker.SetChangeControl(ctx, goclient.ChangeControlUpdate{ApproverMustDiffer: &yes}, record("OPS-3: differ"))
	require.NoError(t, err)
	require.True(t, written.ApproverMustDiffer)

	for name, bad := range map[string]goclient.ChangeControlUpdate{
		"ticket pattern":    {TicketPattern: ptr("(")},
		"reason pattern":    {ReasonPattern: ptr("(")},
		"proposal lifetime": {ProposalLifetime: new(time.Second)},
	} {
		_, err := maker.SetChangeControl(ctx, bad, record("OPS-4: bad"))
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), name)
	}
	_, err = adminClient(t, db.LoginPool(t, "durable_job_worker")).SetChangeControl(ctx, goclient.ChangeControlUpdate{},
		record("OPS-4: not mine"))
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
	after, err := maker.ChangeControl(ctx)
	require.NoError(t, err)
	require.Equal(t, written, after, "refused changes changed nothing")

	written, err = maker.SetChangeControl(ctx, goclient.ChangeControlUpdate{RequireSecondOperator: &yes,
		ProposalLifetime: new(2 * time.Hour)}, record("OPS-5: four eyes"))
	require.NoError(t, err)
	require.True(t, written.RequireSecondOperator)
	require.Equal(t, 2*time.Hour, written.ProposalLifetime)

	values := map[string]any{"payload_retention": "10800000000 microseconds", "record_retention": "172800000000 microseconds"}
	id, err := maker.Propose(ctx, "retention_policy", "etl.ret", values, "OPS-6: shorter", "")
	require.NoError(t, err)
	pending, err := checker.Proposals(ctx, false)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, "pending", pending[0].State)
	require.ErrorIs(t, maker.ApproveProposal(ctx, id), goclient.ErrInvalidPolicy, "not the proposer's own")
	require.NoError(t, checker.ApproveProposal(ctx, id))
	withdrawn, err := maker.Propose(ctx, "retention_policy", "etl.ret", values, "OPS-7: again", "")
	require.NoError(t, err)
	require.NoError(t, maker.RejectProposal(ctx, withdrawn, "OPS-7: withdrawn"))
	pending, err = checker.Proposals(ctx, false)
	require.NoError(t, err)
	require.Empty(t, pending)
	all, err := checker.Proposals(ctx, true)
	require.NoError(t, err)
	require.Len(t, all, 2)

	_, err = maker.Propose(ctx, "change_control", "", map[string]any{"no json": make(chan int)}, "OPS-8: x", "")
	require.Error(t, err, "values that are no JSON are refused before the database")
}

// A lease policy, retention policy or change-control proposal holds the
// settings it gives (change control: the whole setting, the current value
// of what it leaves out) and, approved by another operator, takes effect
// as the change itself would.
func TestProposeSettingsTakeEffectWhenApproved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	maker := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	checker := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	change := goclient.ChangeRecord{Reason: "OPS-9: proposed"}
	values := func(id int64) string {
		all, err := checker.Proposals(ctx, false)
		require.NoError(t, err)
		for _, p := range all {
			if p.ID == id {
				return string(p.ProposedValues)
			}
		}
		t.Fatalf("no pending proposal %d", id)
		return ""
	}

	lease, enabled := 45*time.Second, false
	id, err := maker.ProposeLeasePolicy(ctx, goclient.LeasePolicyUpdate{Queue: "etl.prop", LeaseDuration: &lease,
		RenewalEnabled: &enabled, Reason: change.Reason})
	require.NoError(t, err)
	require.JSONEq(t, `{"lease_duration": "45000000 microseconds", "renewal_enabled": false}`, values(id))
	require.NoError(t, checker.ApproveProposal(ctx, id))
	policies, err := checker.QueueLeasePolicies(ctx)
	require.NoError(t, err)
	found := false
	for _, p := range policies {
		if p.Queue == "etl.prop" {
			found = true
			require.Equal(t, lease, p.LeaseDuration)
			require.False(t, p.RenewalEnabled)
		}
	}
	require.True(t, found, "the approved lease policy")

	id, err = maker.ProposeRetentionPolicy(ctx, "etl.prop", 3*time.Hour, 48*time.Hour, change)
	require.NoError(t, err)
	require.JSONEq(t, `{"payload_retention": "10800000000 microseconds", "record_retention": "172800000000 microseconds"}`, values(id))
	require.NoError(t, checker.ApproveProposal(ctx, id))

	before, err := maker.ChangeControl(ctx)
	require.NoError(t, err)
	pattern := `^OPS-[0-9]+: .+$`
	id, err = maker.ProposeChangeControl(ctx, goclient.ChangeControlUpdate{ReasonPattern: &pattern}, change)
	require.NoError(t, err)
	require.JSONEq(t, `{"ticket_pattern": `+quoteJSON(t, before.TicketPattern)+`, "require_approver": false,
		"approver_must_differ": `+map[bool]string{true: "true", false: "false"}[before.ApproverMustDiffer]+`,
		"reason_pattern": "^OPS-[0-9]+: .+$", "require_second_operator": false,
		"proposal_lifetime": "`+strconv.FormatInt(before.ProposalLifetime.Microseconds(), 10)+` microseconds"}`, values(id))
	require.NoError(t, checker.ApproveProposal(ctx, id))
	after, err := maker.ChangeControl(ctx)
	require.NoError(t, err)
	require.Equal(t, pattern, after.ReasonPattern)

	empty := ""
	id, err = maker.ProposeChangeControl(ctx, goclient.ChangeControlUpdate{ReasonPattern: &empty}, goclient.ChangeRecord{Reason: "OPS-10: free"})
	require.NoError(t, err)
	require.Contains(t, values(id), `"reason_pattern": null`, "free text again")

	_, err = adminClient(t, db.LoginPool(t, "durable_job_worker")).ProposeChangeControl(ctx, goclient.ChangeControlUpdate{}, change)
	require.ErrorIs(t, err, goclient.ErrPermissionDenied, "reading the setting is refused first")
}

// quoteJSON is s as a JSON string.
func quoteJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// A whole purge runs batches until one finds nothing left and sums them
// per queue and kind: rows past the record retention go, payloads past the
// payload retention go and their rows stay. A login that may not purge
// fails at the first batch.
func TestPurgeAllExpiredRunsBatchesUntilNothingIsLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	owner := db.Pool(t)
	finished := func(queue, age string) {
		var id int64
		require.NoError(t, owner.QueryRow(ctx, `SELECT durable_jobs.enqueue_job($1, '{}')`, queue).Scan(&id))
		_, err := owner.Exec(ctx, `SELECT durable_jobs.complete_job(c.job_record_id, c.lease_claim_token, 'w-purge', '{}')
			FROM durable_jobs.claim_next_job($1, 'w-purge') c`, queue)
		require.NoError(t, err)
		_, err = owner.Exec(ctx, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - $2::interval
			WHERE job_record_id = $1`, id, age)
		require.NoError(t, err)
	}
	for range 3 {
		finished("etl.b", "400 days")
	}
	finished("etl.a", "40 days")
	finished("etl.a", "1 day")

	report, err := adminClient(t, db.LoginPool(t, "durable_job_operator")).PurgeAllExpired(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, goclient.PurgeReport{Batches: 3, Purged: []goclient.PurgeTotal{
		{Queue: "etl.a", Kind: "payload", Count: 1}, {Queue: "etl.b", Kind: "job_record", Count: 3}}}, report)

	report, err = adminClient(t, db.LoginPool(t, "durable_job_worker")).PurgeAllExpired(ctx, 2)
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
	require.Zero(t, report.Batches)
}
