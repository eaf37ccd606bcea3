package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/leaseport"
	"github.com/mightyetl/leasefence/internal/pglocal"
	sqlbundle "github.com/mightyetl/leasefence/sql"
	"github.com/mightyetl/leasefence/textfmt"
)

// The demo's lease policy and client settings: short, so that the three
// stories fit in well under a minute.
const (
	demoLeaseDuration    = 3 * time.Second
	demoRenewalInterval  = time.Second
	demoSafetyMargin     = time.Second
	demoAttemptTimeout   = 500 * time.Millisecond
	demoMaxClaimLifetime = time.Minute
	demoPollInterval     = 200 * time.Millisecond
	// demoLoginLifetime is how long the passwords of the demo's login roles
	// stay valid (VALID UNTIL), should the demo never get to drop them.
	demoLoginLifetime = 5 * time.Minute
	// demoSearchPath is the search_path of the demo's admin and worker
	// connections: its SQL names every object with its schema, and no
	// schema another role can create objects in is searched.
	demoSearchPath = "pg_catalog, pg_temp"
	// demoPolicyReason is the reason recorded with the demo's policies.
	demoPolicyReason = "leasectl demo: short leases so that the three stories fit in a minute"
)

// Runtime roles the demo makes login roles for.
const (
	roleWorker   = "durable_job_worker"
	roleProducer = "durable_job_producer"
	roleOperator = "durable_job_operator"
)

// Options says where and how the demo plays.
type Options struct {
	// DatabaseURL is the database to play in (a role that may apply the
	// bundle, create roles and create a schema). Empty starts a throwaway
	// PostgreSQL from the server binaries on this machine.
	DatabaseURL string
	// HTMLPath is where the HTML timeline is written. Defaults to a new
	// file in the OS temp folder.
	HTMLPath string
	// Keep keeps the run's schema, jobs, lease policies and outcome tallies
	// for inspection (with DatabaseURL; a throwaway cluster is removed in
	// any case). The login roles are dropped all the same.
	Keep bool
	// Out receives the demo's narration. Defaults to io.Discard.
	Out io.Writer
	// Connect opens a pool for the demo's producer and operator logins
	// from their connection strings and checks that it answers. Defaults
	// to pgxpool.New followed by a ping; leasectl passes its own, which
	// tells a refusal without the login's name.
	Connect func(ctx context.Context, connString string) (*pgxpool.Pool, error)
	// ConnectError rewrites the error of a connection to DatabaseURL (or
	// the throwaway cluster) that could not be made. Defaults to the error
	// as it is, which names the login and the database; leasectl passes
	// the rewrite its other commands use, which names neither.
	ConnectError func(error) error
	// Health, when set, prints lease health after the stories, given a
	// connection string of the demo's operator login; an error stops the
	// demo. leasectl passes its health command. Defaults to no health
	// table.
	Health func(ctx context.Context, connString string) error
}

// Error is how a run failed: what the demo was doing and why. Every error
// Run returns is an *Error.
type Error struct {
	// Step says what the demo was doing ("apply the migration bundle",
	// "story 2", "clean up", ...).
	Step string
	// Err is why it failed; ErrInterrupted when the context was cancelled.
	Err error
}

// Error returns "step: cause".
func (e *Error) Error() string { return e.Step + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrInterrupted is the cause of a run whose context was cancelled (Ctrl-C
// in leasectl): everything it started was stopped and removed.
var ErrInterrupted = errors.New("interrupted")

// Run plays the three stories as Options say and cleans up after them, also
// when ctx is cancelled. It returns nil when every outcome held in the
// database, else an *Error.
func Run(ctx context.Context, opts Options) error {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Connect == nil {
		opts.Connect = connectPool
	}
	if opts.ConnectError == nil {
		opts.ConnectError = func(err error) error { return err }
	}
	d := &demo{opts: opts, out: opts.Out}
	err := d.play(ctx)
	cleanupErr := d.cleanup()
	switch {
	case err != nil:
		return &Error{Step: d.step, Err: err}
	case cleanupErr != nil:
		return &Error{Step: "clean up", Err: cleanupErr}
	}
	return nil
}

// connectPool is the default of Options.Connect.
func connectPool(ctx context.Context, connString string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, connString)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// demo is one run.
type demo struct {
	opts Options
	out  io.Writer

	// step says what the demo is doing, for the error line.
	step string
	// run is the random name part of this run's queues, roles and schema.
	run    string
	queues [3]string
	rec    *demoRecorder
	// schemaName is the name of the demo's own schema; schema and
	// targetTable are it and its table as SQL identifiers.
	schemaName  string
	schema      string
	targetTable string

	adminURL string
	admin    *pgxpool.Pool
	where    string
	// startedAt is the database time when the run began.
	startedAt time.Time
	// clockOffset is the database clock minus the local wall clock, used
	// only when the database cannot be asked for its time.
	clockOffset time.Duration
	// mayCreateRoles and hasVersionTable are what connect learned about the
	// admin role and the database.
	mayCreateRoles  bool
	hasVersionTable bool

	// workerCfg is the worker login's pool configuration; newWorker copies it.
	workerCfg    *pgxpool.Config
	producer     *session
	operator     *session
	operatorConn string

	cleanups []func(ctx context.Context) error
}

// session is a pool of one of the demo's logins with a goclient.Admin
// over it (the operator's calls, State) and, for the producer, who
// enqueues, a Client.
type session struct {
	pool  *pgxpool.Pool
	admin *goclient.Admin
	// client is nil unless openSession was asked for one.
	client *goclient.Client
}

// openSession connects as connString (with Options.Connect) and builds an
// Admin over the pool, and a Client as well when withClient is true: a
// login that only reads and operates needs no heartbeat.
func (d *demo) openSession(ctx context.Context, connString string, withClient bool) (*session, error) {
	pool, err := d.opts.Connect(ctx, connString)
	if err != nil {
		return nil, err
	}
	// NewAdmin refuses only a nil pool; the client's defaults pass its own
	// checks: NewClient fails only on settings it is given.
	s := &session{pool: pool, admin: must(goclient.NewAdmin(pool))}
	if withClient {
		s.client = must(goclient.NewClient(pool, goclient.Config{}))
	}
	return s, nil
}

// close releases the client, if any, and the pool.
func (s *session) close() {
	if s.client != nil {
		_ = s.client.Close()
	}
	s.pool.Close()
}

// play runs the whole demo; cleanup undoes what it set up.
func (d *demo) play(ctx context.Context) error {
	d.run = randomName(3)
	d.queues = [3]string{"demo." + d.run + ".long-job", "demo." + d.run + ".frozen-worker", "demo." + d.run + ".cancel"}
	d.schemaName = "leasefence_demo_" + d.run
	d.schema = pgx.Identifier{d.schemaName}.Sanitize()
	d.targetTable = d.schema + "." + pgx.Identifier{"target"}.Sanitize()
	out := d.out
	printf(out, "leasefence demo: database-fenced leases in three stories\n\n")

	if err := d.connect(ctx); err != nil {
		return err
	}
	if err := d.prepare(ctx); err != nil {
		return err
	}
	d.rec = newDemoRecorder(out)
	d.addCleanup(func(context.Context) error { d.rec.close(); return nil })
	d.rec.say("\nEvery [db ...] time below is the database's clock_timestamp() in UTC. Workers are real goclient")
	d.rec.say("clients with lease %s, renewal interval %s, safety margin %s; the database alone decides expiry.",
		textfmt.Duration(demoLeaseDuration), textfmt.Duration(demoRenewalInterval), textfmt.Duration(demoSafetyMargin))

	for i, story := range []func(context.Context) error{d.storyLongJob, d.storyFrozenWorker, d.storyCancel} {
		d.step = fmt.Sprintf("story %d", i+1)
		if err := story(ctx); err != nil {
			// The timeline of the run so far helps to see what went wrong.
			if timelineErr := d.writeTimeline(ctx); timelineErr != nil {
				printf(out, "\nThe HTML timeline of the run so far could not be written: %s\n", textfmt.OneLine(timelineErr.Error()))
			}
			return interrupted(ctx, err)
		}
	}
	d.rec.close()

	d.step = "show lease health"
	if d.opts.Health != nil {
		printf(out, "\nLease health (leasectl health, as the demo's operator login):\n")
		if err := d.opts.Health(ctx, d.operatorConn); err != nil {
			return interrupted(ctx, err)
		}
	}
	d.step = "summarize evidence"
	if err := d.printEvidence(ctx); err != nil {
		return interrupted(ctx, err)
	}
	d.step = "write the HTML timeline"
	return interrupted(ctx, d.writeTimeline(ctx))
}

// interrupted returns ErrInterrupted when ctx was cancelled, else err.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ErrInterrupted
	}
	return err
}

// connect starts the throwaway cluster (or uses --database-url), opens the
// admin pool and reads what the rest needs to know about the database.
func (d *demo) connect(ctx context.Context) error {
	out := d.out
	d.adminURL = d.opts.DatabaseURL
	if d.opts.DatabaseURL == "" {
		d.step = "start PostgreSQL"
		printf(out, "Starting a throwaway PostgreSQL from this machine's binaries (initdb, then the server)...\n")
		began := time.Now()
		cluster, err := pglocal.Start(ctx, pglocal.Options{
			// A throwaway cluster needs no crash safety; this only makes
			// initdb faster. Commits stay synchronous.
			Settings:        map[string]string{"fsync": "off"},
			NoSignalHandler: true, // Ctrl-C cancels ctx; cleanup stops the cluster
			Logf:            func(format string, args ...any) { printf(out, "  "+format+"\n", args...) },
		})
		if err != nil {
			return interrupted(ctx, err)
		}
		d.addCleanup(func(context.Context) error { return cluster.Stop() })
		printf(out, "PostgreSQL is up on 127.0.0.1:%d after %.1f s (its files: %s, removed at the end)\n",
			cluster.Port(), time.Since(began).Seconds(), filepath.Dir(cluster.DataDir()))
		d.adminURL = cluster.URL("postgres")
		d.where = "a throwaway cluster"
	} else {
		d.where = "an existing database"
	}
	d.step = "connect to database"
	cfg, err := goclient.ParsePoolConfig(d.adminURL, statementTimeout)
	if err != nil {
		// pgx's text may quote the URL, password included.
		return errors.New("the database URL does not parse")
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	cfg.ConnConfig.RuntimeParams["search_path"] = demoSearchPath
	d.admin = newPool(ctx, cfg, 4)
	d.addCleanup(func(context.Context) error { d.admin.Close(); return nil })
	if err := d.admin.Ping(ctx); err != nil {
		return interrupted(ctx, d.opts.ConnectError(err))
	}
	var version string
	local := time.Now()
	if err := d.admin.QueryRow(ctx, `SELECT pg_catalog.current_setting('server_version'), pg_catalog.clock_timestamp(),
			(SELECT rolsuper OR rolcreaterole FROM pg_catalog.pg_roles WHERE rolname = current_user),
			pg_catalog.to_regclass($1) IS NOT NULL`, sqlbundle.VersionTable).
		Scan(&version, &d.startedAt, &d.mayCreateRoles, &d.hasVersionTable); err != nil {
		return interrupted(ctx, err)
	}
	d.clockOffset = d.startedAt.Sub(local.Add(time.Since(local) / 2))
	d.where = fmt.Sprintf("%s (PostgreSQL %s)", d.where, version)
	if d.opts.DatabaseURL != "" {
		printf(out, "Connected to an existing database (PostgreSQL %s).\n", version)
	}
	return nil
}

// prepare applies the bundle when missing, creates the demo's login roles
// and target table, and sets the demo queues' lease policy.
func (d *demo) prepare(ctx context.Context) error {
	out := d.out
	d.step = "check privileges"
	if !d.mayCreateRoles {
		return errors.New("the --database-url role may not create roles; use the role that applied the bundle or a superuser")
	}

	d.step = "apply the migration bundle"
	var version int32
	if d.hasVersionTable {
		// An empty version table (tern adds its row on the first migration)
		// counts as no bundle.
		if err := d.admin.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM `+sqlbundle.VersionTable).Scan(&version); err != nil {
			return interrupted(ctx, err)
		}
	}
	newest := sqlbundle.NewestVersion()
	switch {
	case version == 0:
		printf(out, "Applying the migration bundle (%d migrations: schema, roles, fenced functions)...\n", newest)
		began := time.Now()
		if err := sqlbundle.Apply(ctx, d.adminURL); err != nil {
			return interrupted(ctx, err)
		}
		printf(out, "Bundle applied in %.1f s: the database is at version %d.\n", time.Since(began).Seconds(), newest)
	case version == newest:
		printf(out, "The bundle is already applied (version %d); nothing to migrate.\n", version)
	default:
		return fmt.Errorf("the database is at bundle version %d and this leasectl carries version %d; "+
			"the demo only applies the bundle to a database without one (see leasectl migrate)", version, newest)
	}

	d.step = "create the demo's login roles and target table"
	printf(out, "Creating login roles for a worker, a producer and an operator, each granted only its runtime role,\n"+
		"and the schema %s for the workers' target rows...\n", d.schemaName)
	if err := d.createLogins(ctx); err != nil {
		return interrupted(ctx, err)
	}
	if d.opts.DatabaseURL != "" && !d.opts.Keep {
		d.addCleanup(d.deleteRunData)
	}

	d.step = "set the demo queues' lease policy"
	for _, q := range d.queues {
		lease, interval, lifetime, renew := demoLeaseDuration, demoRenewalInterval, demoMaxClaimLifetime, true
		if _, err := d.operator.admin.UpdateQueueLeasePolicy(ctx, goclient.LeasePolicyUpdate{
			Queue: q, LeaseDuration: &lease, RenewalInterval: &interval,
			MaxClaimLifetime: &lifetime, RenewalEnabled: &renew, Reason: demoPolicyReason,
		}); err != nil {
			return interrupted(ctx, err)
		}
	}
	printf(out, "Queues %s: lease %s renewed every %s (update_queue_lease_policy by the operator; recorded as evidence).\n",
		strings.Join(d.queues[:], ", "), textfmt.Duration(demoLeaseDuration), textfmt.Duration(demoRenewalInterval))
	return nil
}

// loginName is the name of the demo's login role granted runtimeRole.
func (d *demo) loginName(runtimeRole string) string {
	return "leasefence_demo_" + d.run + "_" + strings.TrimPrefix(runtimeRole, "durable_job_")
}

// createLogins makes the demo's three login roles, its schema and its
// target table, to be dropped at cleanup, and opens the producer's and the
// operator's sessions. Each password is sent only as a SCRAM-SHA-256
// verifier and expires after demoLoginLifetime. The schema is new (CREATE
// SCHEMA fails on one that exists) and owned by the admin role, so the
// table in it, made in the same transaction, is the demo's own: nobody
// else can have put a trigger, a rule or a view there.
func (d *demo) createLogins(ctx context.Context) error {
	roles := []string{roleWorker, roleProducer, roleOperator}
	passwords := map[string]string{}
	validUntil := d.dbNow().Add(demoLoginLifetime).UTC().Format("2006-01-02 15:04:05.000000+00")
	var setup strings.Builder
	for _, role := range roles {
		passwords[role] = randomName(16)
		// Names are made of [a-z0-9_], and verifiers of base64, '$' and ':',
		// so they need no quoting.
		fmt.Fprintf(&setup, "CREATE ROLE %s LOGIN PASSWORD '%s' VALID UNTIL '%s' IN ROLE %s;\n", d.loginName(role),
			newSCRAMVerifier(passwords[role]), validUntil, role)
		// As the runbook asks of every runtime login: a row it locks is held
		// for a bounded time.
		fmt.Fprintf(&setup, "ALTER ROLE %s SET statement_timeout = '1min';\n", d.loginName(role))
		fmt.Fprintf(&setup, "ALTER ROLE %s SET idle_in_transaction_session_timeout = '1min';\n", d.loginName(role))
	}
	worker := d.loginName(roleWorker)
	setup.WriteString(`CREATE SCHEMA ` + d.schema + `;
	COMMENT ON SCHEMA ` + d.schema + ` IS 'leasectl demo: its target table, dropped at the end of the run';
	CREATE TABLE ` + d.targetTable + ` (
		job_record_id            pg_catalog.int8 NOT NULL,
		lease_fencing_generation pg_catalog.int8 NOT NULL,
		queue_name               pg_catalog.text NOT NULL,
		written_by               pg_catalog.text NOT NULL,
		written_at               pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
		CONSTRAINT target_pkey PRIMARY KEY (job_record_id, lease_fencing_generation));
	COMMENT ON TABLE ` + d.targetTable + ` IS 'leasectl demo: the rows its workers write in the same transaction as complete_job';
	GRANT USAGE ON SCHEMA ` + d.schema + ` TO ` + worker + `;
	GRANT SELECT, INSERT ON ` + d.targetTable + ` TO ` + worker)
	// Without arguments pgx sends this as one simple query, which
	// PostgreSQL runs as one transaction: all of it is made, or none.
	if _, err := d.admin.Exec(ctx, setup.String()); err != nil {
		return err
	}
	d.addCleanup(d.dropLogins)

	// The workers' pools are made per story from a copy of the admin's
	// configuration, so that they reach the same server the same way.
	d.workerCfg = d.admin.Config()
	d.workerCfg.ConnConfig.User, d.workerCfg.ConnConfig.Password = worker, passwords[roleWorker]
	d.workerCfg.ConnConfig.RuntimeParams["application_name"] = goclient.ApplicationName

	d.operatorConn = loginConnString(d.adminURL, d.loginName(roleOperator), passwords[roleOperator])
	for _, s := range []struct {
		to         **session
		conn       string
		withClient bool
	}{
		{&d.producer, loginConnString(d.adminURL, d.loginName(roleProducer), passwords[roleProducer]), true},
		{&d.operator, d.operatorConn, false},
	} {
		sess, err := d.openSession(ctx, s.conn, s.withClient)
		if err != nil {
			return err
		}
		d.addCleanup(func(context.Context) error { sess.close(); return nil })
		*s.to = sess
	}
	return nil
}

// dropLogins is the cleanup of createLogins: it drops the demo's schema
// (unless --keep) and its login roles. The schema is dropped without
// CASCADE: should another role have put something in it, the drop fails and
// the demo says so. The login roles are dropped in any case, once the
// worker's grants on a kept schema are revoked.
func (d *demo) dropLogins(ctx context.Context) error {
	worker := d.loginName(roleWorker)
	objects := "DROP TABLE " + d.targetTable + "; DROP SCHEMA " + d.schema
	done := "Dropped the demo's login roles and its schema " + d.schemaName + "."
	if d.opts.Keep {
		objects = "REVOKE ALL ON " + d.targetTable + " FROM " + worker + "; REVOKE ALL ON SCHEMA " + d.schema + " FROM " + worker
		done = "Dropped the demo's login roles; kept (--keep) its schema " + d.schemaName +
			", and the jobs, lease policies and outcome tallies of queues demo." + d.run + ".*."
	}
	_, objectsErr := d.admin.Exec(ctx, objects)
	_, rolesErr := d.admin.Exec(ctx, "DROP ROLE IF EXISTS "+worker+", "+d.loginName(roleProducer)+", "+d.loginName(roleOperator))
	if d.opts.DatabaseURL != "" && objectsErr == nil && rolesErr == nil {
		printf(d.out, "%s\n", done)
	}
	return errors.Join(objectsErr, rolesErr)
}

// deleteRunJobsSQL deletes the jobs of the queues in $1 with their payload
// and outcome ledger rows, in one statement whose own table is job_record
// (so a role that may not delete jobs is told so about job_record).
const deleteRunJobsSQL = `WITH gone_payloads AS (
    DELETE FROM durable_jobs.job_payload_record p USING durable_jobs.job_record j
    WHERE p.job_record_id = j.job_record_id AND j.queue_name = ANY ($1::pg_catalog.text[])
), gone_outcomes AS (
    DELETE FROM durable_jobs.job_outcome_ledger l USING durable_jobs.job_record j
    WHERE l.job_record_id = j.job_record_id AND j.queue_name = ANY ($1::pg_catalog.text[])
)
DELETE FROM durable_jobs.job_record WHERE queue_name = ANY ($1::pg_catalog.text[])`

// deleteRunData deletes the run's jobs (their payloads and outcomes go
// with them), lease policies and outcome tallies, in one transaction, when
// the demo played in an existing database without --keep. The
// control-evidence records of its policy changes stay: that table refuses
// every deletion. A role that may not delete from the bundle's tables
// leaves everything as it is, and the demo says so.
func (d *demo) deleteRunData(ctx context.Context) error {
	queues := d.queues[:]
	err := pgx.BeginFunc(ctx, d.admin, func(tx pgx.Tx) error {
		// From bundle version 19 no foreign key deletes a job's payload and
		// outcome rows with it: one statement deletes all three.
		_, err := tx.Exec(ctx, deleteRunJobsSQL, queues)
		if err == nil {
			_, err = tx.Exec(ctx, `DELETE FROM durable_jobs.lease_outcome_tally WHERE queue_name = ANY ($1::pg_catalog.text[])`, queues)
		}
		if err == nil {
			_, err = tx.Exec(ctx, `DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = ANY ($1::pg_catalog.text[])`, queues)
		}
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlStateInsufficientPrivilege {
		printf(d.out, "Left the jobs, lease policies and outcome tallies of queues demo.%s.* in the database: "+
			"the --database-url role may not delete them (%s).\n", d.run, textfmt.OneLine(pgErr.Message))
		return nil
	}
	if err == nil {
		printf(d.out, "Deleted the jobs, lease policies and outcome tallies of queues demo.%s.*; the control-evidence "+
			"records of its policy changes stay (the evidence table is append-only).\n", d.run)
	}
	return err
}

// sqlStateInsufficientPrivilege is PostgreSQL's "permission denied".
const sqlStateInsufficientPrivilege = "42501"

// loginConnString is base (a URL, a keyword/value string or empty) with its
// user and password replaced.
func loginConnString(base, user, password string) string {
	if u, err := url.Parse(base); err == nil && (strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://")) {
		u.User = url.UserPassword(user, password)
		return u.String()
	}
	// In a keyword/value string a later keyword wins.
	return strings.TrimSpace(base + " user='" + user + "' password='" + password + "'")
}

// newPool opens a pool over cfg with at most maxConns connections. It
// connects lazily, on first use.
func newPool(ctx context.Context, cfg *pgxpool.Config, maxConns int32) *pgxpool.Pool {
	cfg.MaxConns = maxConns
	// pgxpool.NewWithConfig fails only for MaxConns < 1.
	return must(pgxpool.NewWithConfig(ctx, cfg))
}

// must returns v, or panics when err is set. The demo uses it only where
// the inputs are its own constants, which the called function accepts: an
// error there is a bug in the demo, not something a user can cause.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("leasectl demo: a call on the demo's fixed settings failed: %v", err))
	}
	return v
}

// addCleanup registers f to run at cleanup, after everything registered
// later.
func (d *demo) addCleanup(f func(ctx context.Context) error) { d.cleanups = append(d.cleanups, f) }

// cleanup runs the cleanups in reverse order, even after Ctrl-C.
func (d *demo) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, d.cleanups[i](ctx)) // errors.Join drops the nils
	}
	d.cleanups = nil
	return errors.Join(errs...)
}

// dbNow returns the database's clock_timestamp(), or the local clock
// corrected by the offset measured at the start when the database does not
// answer.
func (d *demo) dbNow() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var t time.Time
	if err := d.admin.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&t); err != nil {
		return time.Now().Add(d.clockOffset)
	}
	return t
}

// ---------------------------------------------------------------------------
// Workers.

// demoWorker is one goclient client of the worker login, with a renewal
// port that reports every renewal to the event log.
type demoWorker struct {
	label  string
	pool   *pgxpool.Pool
	hbPool *pgxpool.Pool
	port   *demoPort
	client *goclient.Client
}

// newWorker builds a worker client for story; close it at the story's end.
func (d *demo) newWorker(ctx context.Context, story int, label string) *demoWorker {
	pool := d.workerPool(ctx, 10*time.Second, 3)
	// The heartbeat's own pool: never shared with the handler.
	hbPool := d.workerPool(ctx, demoAttemptTimeout, 2)
	port := &demoPort{inner: leaseport.NewPg(hbPool, demoAttemptTimeout), d: d, story: story, label: label,
		seen: map[int64]portSeen{}}
	client := must(goclient.NewClient(pool, leaseport.With(goclient.Config{
		LeaseDuration: demoLeaseDuration, RenewalInterval: demoRenewalInterval, SafetyMargin: demoSafetyMargin,
		AttemptTimeout: demoAttemptTimeout, MaxInFlightRenewals: 2, RenewalPoolSize: 2,
	}, port)))
	return &demoWorker{label: label, pool: pool, hbPool: hbPool, port: port, client: client}
}

// workerPool opens a pool of the worker login with at most maxConns
// connections, whose statements time out after timeout.
func (d *demo) workerPool(ctx context.Context, timeout time.Duration, maxConns int32) *pgxpool.Pool {
	cfg := d.workerCfg.Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	return newPool(ctx, cfg, maxConns)
}

// close stops the client (releasing any claim it still keeps) and its pools.
func (w *demoWorker) close() {
	_ = w.client.Close()
	w.hbPool.Close()
	w.pool.Close()
}

// portSeen is what the port last saw for one job.
type portSeen struct {
	claimedAt time.Time // database time of the claim
	renewals  int
	expires   time.Time // last granted expiry (database time)
	dbTime    time.Time // database time of that answer
	local     time.Time // local time the answer arrived
}

// demoPort is a leaseport.Port around the production port: it passes
// every attempt through and records its answer as an event. freeze makes
// every later attempt hang until its attempt timeout without reaching the
// database, the way a stalled network or a paused process would.
type demoPort struct {
	inner  leaseport.Port
	d      *demo
	story  int
	label  string
	frozen atomic.Bool

	mu   sync.Mutex
	seen map[int64]portSeen
}

// RenewClaims implements leaseport.Port.
func (p *demoPort) RenewClaims(ctx context.Context, claims []goclient.Claim) ([]goclient.RenewalResult, error) {
	if p.frozen.Load() {
		<-ctx.Done()
		at := p.d.dbNow()
		for _, c := range claims {
			p.d.rec.emit(demoEvent{At: at, Story: p.story, Job: c.JobID(), Actor: p.label, Kind: evRenewalFailed,
				Text: fmt.Sprintf("sent a renewal of job %d that got no answer within its %s attempt timeout (frozen); "+
					"a failed attempt never counts as a renewal", c.JobID(), textfmt.Duration(demoAttemptTimeout))})
		}
		return nil, ctx.Err()
	}
	results, err := p.inner.RenewClaims(ctx, claims)
	recv := time.Now()
	if err != nil || len(results) != len(claims) {
		at := p.d.dbNow()
		for _, c := range claims {
			p.d.rec.emit(demoEvent{At: at, Story: p.story, Job: c.JobID(), Actor: p.label, Kind: evRenewalFailed,
				Text: fmt.Sprintf("could not renew job %d (the database call failed); it retries only while it still trusts the claim", c.JobID())})
		}
		return results, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range results {
		id := claims[i].JobID()
		ev := demoEvent{At: r.DatabaseTime, Story: p.story, Job: id, Actor: p.label}
		switch r.Outcome {
		case goclient.RenewalRenewed:
			s := p.seen[id]
			s.renewals++
			s.expires, s.dbTime, s.local = r.LeaseExpiresAt, r.DatabaseTime, recv
			p.seen[id] = s
			ev.Kind, ev.Until = evRenewed, r.LeaseExpiresAt
			ev.Text = fmt.Sprintf("renewed job %d until %s (renewal %d", id, clockTime(r.LeaseExpiresAt), s.renewals)
			if !s.claimedAt.IsZero() {
				held := r.DatabaseTime.Sub(s.claimedAt)
				ev.Text += fmt.Sprintf("; held %.1f s = %.1f × the original lease", held.Seconds(), held.Seconds()/demoLeaseDuration.Seconds())
			}
			ev.Text += ")"
		case goclient.RenewalStale:
			ev.Kind = evStale
			ev.Text = fmt.Sprintf("tried to renew job %d: the database answered stale, so the client stops renewing "+
				"and cancels the handler's context at once", id)
		default:
			ev.Kind = evStale
			ev.Text = fmt.Sprintf("tried to renew job %d: the database answered %s", id, r.Outcome)
		}
		p.d.rec.emit(ev)
	}
	return results, nil
}

// claimed tells the port when the job was claimed.
func (p *demoPort) claimed(job goclient.Job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[job.ID()] = portSeen{claimedAt: job.DatabaseTime(), expires: job.LeaseExpiresAt(),
		dbTime: job.DatabaseTime(), local: time.Now()}
}

// last returns what the port last saw of job.
func (p *demoPort) last(job int64) portSeen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[job]
}

// freeze makes every later attempt hang without reaching the database.
func (p *demoPort) freeze() { p.frozen.Store(true) }

// waitRenewals waits until job has had n confirmed renewals.
func (p *demoPort) waitRenewals(ctx context.Context, job int64, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for p.last(job).renewals < n {
		if sleep(ctx, 20*time.Millisecond) != nil { // an interrupt ends the demo with ErrInterrupted instead
			return fmt.Errorf("job %d had %d renewal(s) after %s, want %d", job, p.last(job).renewals, timeout, n)
		}
	}
	return nil
}

// claimEvent records a worker's claim of job.
func (d *demo) claimEvent(story int, w *demoWorker, job goclient.Job) {
	w.port.claimed(job)
	ev := demoEvent{At: job.DatabaseTime(), Story: story, Job: job.ID(), Actor: w.label, Until: job.LeaseExpiresAt(),
		Kind: evClaimed}
	if job.FencingGeneration() > 1 {
		ev.Kind = evReclaimed
		ev.Text = fmt.Sprintf("reclaimed job %d until %s: a new claim, fencing generation %d, attempt %d",
			job.ID(), clockTime(job.LeaseExpiresAt()), job.FencingGeneration(), job.Attempt())
	} else {
		ev.Text = fmt.Sprintf("claimed job %d until %s (fencing generation %d, attempt %d)",
			job.ID(), clockTime(job.LeaseExpiresAt()), job.FencingGeneration(), job.Attempt())
	}
	d.rec.emit(ev)
}

// enqueue adds a job to queue as the producer and records it.
func (d *demo) enqueue(ctx context.Context, story int, queue, what string) (int64, error) {
	// The payload looks like a real one, personal data included. None of
	// it is printed (what describes the job in the demo's own words), and
	// the renewal path never reads it.
	payload := fmt.Sprintf(`{"extract_name": "crm-contacts-%s", "contact_email": "dana.kim.%s@example.invalid", "row_count": 1200}`,
		randomName(4), randomName(4))
	id, err := d.producer.client.Enqueue(ctx, goclient.EnqueueParams{Queue: queue, Payload: []byte(payload), MaxAttempts: 3})
	if err != nil {
		return 0, err
	}
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: "producer", Kind: evEnqueued,
		Text: fmt.Sprintf("enqueued job %d on %s (%s)", id, queue, what)})
	return id, nil
}

// writeTarget writes the worker's target row in tx, to the demo's own
// table.
func (d *demo) writeTarget(ctx context.Context, tx pgx.Tx, label string, job goclient.Job) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+d.targetTable+` (job_record_id, lease_fencing_generation, queue_name, written_by)
		VALUES ($1, $2, $3, $4)`, job.ID(), job.FencingGeneration(), job.Queue(), label)
	return err
}

// waitFinal polls the job's state until it leaves QUEUED and RUNNING, and
// returns it with the database time it was seen.
func (d *demo) waitFinal(ctx context.Context, job int64, timeout time.Duration) (goclient.JobState, time.Time, error) {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		st, err := d.producer.admin.State(ctx, job)
		if err != nil {
			return st, time.Time{}, err
		}
		if st.Status != goclient.StatusQueued && st.Status != goclient.StatusRunning {
			return st, d.dbNow(), nil
		}
		if sleep(waitCtx, 50*time.Millisecond) != nil { // an interrupt ends the demo with ErrInterrupted instead
			return st, time.Time{}, fmt.Errorf("job %d is still %s after %s", job, st.Status, timeout)
		}
	}
}

// runWorkers runs workers until the returned stop is called; stop returns
// the first error a worker loop ended with.
func runWorkers(ctx context.Context, workers ...*goclient.Worker) (stop func() error) {
	wctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, len(workers))
	for _, w := range workers {
		go func() { errs <- w.Run(wctx) }()
	}
	var once sync.Once
	var first error
	return func() error {
		once.Do(func() {
			cancel()
			for range workers {
				if err := <-errs; err != nil && first == nil {
					first = err
				}
			}
		})
		return first
	}
}

// receive waits for a value on ch.
func receive[T any](ctx context.Context, ch <-chan T, timeout time.Duration, what string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done(): // an interrupt ends the demo with ErrInterrupted instead
		var zero T
		return zero, fmt.Errorf("%s did not happen within %s", what, timeout)
	}
}

// offer sends v on ch (buffered) unless its buffer is full. Handlers report
// to their story with it: a handler that runs again, on a reclaim the story
// did not expect, must not block its worker's shutdown.
func offer[T any](ch chan<- T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ---------------------------------------------------------------------------
// Story 1: a long job keeps its one owner.

func (d *demo) storyLongJob(ctx context.Context) error {
	const story = 1
	queue := d.queues[0]
	work := 4 * demoLeaseDuration
	d.rec.story(story, "a job that runs four times its lease keeps its one owner",
		fmt.Sprintf("worker-a runs a %s job under a %s lease: its heartbeat renews the claim every %s on its own\n"+
			"goroutine and connection. worker-b polls the same queue the whole time.",
			textfmt.Duration(work), textfmt.Duration(demoLeaseDuration), textfmt.Duration(demoRenewalInterval)))
	a := d.newWorker(ctx, story, "worker-a")
	defer a.close()
	b := d.newWorker(ctx, story, "worker-b")
	defer b.close()

	claimedA := make(chan goclient.Job, 1)
	workerA := must(a.client.NewWorker(goclient.WorkerConfig{Queue: queue, PollInterval: demoPollInterval,
		ShutdownTimeout: time.Second, TxHandler: func(jctx context.Context, tx pgx.Tx, job goclient.Job) error {
			d.claimEvent(story, a, job)
			offer(claimedA, job)
			if err := sleep(jctx, work); err != nil {
				return context.Cause(jctx)
			}
			if err := d.writeTarget(jctx, tx, a.label, job); err != nil {
				return err
			}
			d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: job.ID(), Actor: a.label, Kind: evTargetWrite,
				Text: fmt.Sprintf("finished %s of work; writes its target row and calls complete_job in the same transaction",
					textfmt.Duration(work))})
			return nil
		}}))
	var stolen atomic.Int64
	workerB := must(b.client.NewWorker(goclient.WorkerConfig{Queue: queue, PollInterval: demoPollInterval,
		ShutdownTimeout: time.Second, Handler: func(_ context.Context, job goclient.Job) error {
			stolen.Store(job.ID())
			d.claimEvent(story, b, job)
			return nil
		}}))

	stopA := runWorkers(ctx, workerA)
	defer stopA() //nolint:errcheck // the error is read below on the normal path
	id, err := d.enqueue(ctx, story, queue, fmt.Sprintf("a %s extract", textfmt.Duration(work)))
	if err != nil {
		return err
	}
	job, err := receive(ctx, claimedA, 10*time.Second, "worker-a's claim")
	if err != nil {
		return err
	}
	stopB := runWorkers(ctx, workerB)
	defer stopB() //nolint:errcheck
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: b.label, Kind: evPolling,
		Text: fmt.Sprintf("starts polling %s every %s", queue, textfmt.Duration(demoPollInterval))})

	st, seenAt, err := d.waitFinal(ctx, id, work+10*time.Second)
	if err != nil {
		return err
	}
	elapsed := seenAt.Sub(job.DatabaseTime())
	d.rec.emit(demoEvent{At: seenAt, Story: story, Job: id, Actor: a.label, Kind: evCompleted,
		Text: fmt.Sprintf("completed job %d: %s after %.1f s, %.1f × its original lease, with %d renewals",
			id, st.Status, elapsed.Seconds(), elapsed.Seconds()/demoLeaseDuration.Seconds(), st.RenewalCount)})
	if err := stopB(); err != nil {
		return err
	}
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: b.label, Kind: evNeverClaimed,
		Text: fmt.Sprintf("stops polling: in %.1f s it was never given job %d", d.dbNow().Sub(job.DatabaseTime()).Seconds(), id)})
	if err := stopA(); err != nil {
		return err
	}

	return d.conclude(id, fmt.Sprintf("SUCCEEDED once after %.1f s (%.1f × the %s lease): one claim (generation 1), %d renewals, never reclaimed",
		elapsed.Seconds(), elapsed.Seconds()/demoLeaseDuration.Seconds(), textfmt.Duration(demoLeaseDuration), st.RenewalCount),
		demoCheck{stolen.Load() == 0, fmt.Sprintf("worker-b was given job %d while worker-a held it", stolen.Load())},
		demoCheck{st.Status == goclient.StatusSucceeded, fmt.Sprintf("job %d ended %s, want SUCCEEDED", id, st.Status)},
		demoCheck{st.FencingGeneration == 1 && st.AttemptNumber == 1, fmt.Sprintf(
			"job %d has fencing generation %d and attempt %d, want one claim", id, st.FencingGeneration, st.AttemptNumber)},
		demoCheck{st.RenewalCount >= 3, fmt.Sprintf("job %d was renewed %d times, want at least 3", id, st.RenewalCount)})
}

// demoCheck is one outcome a story checks in the database.
type demoCheck struct {
	ok   bool
	fail string // what is wrong when !ok
}

// conclude ends a story: it returns the first check that failed as the
// story's error, or records the job's summary for the timeline and prints
// it.
func (d *demo) conclude(job int64, summary string, checks ...demoCheck) error {
	for _, c := range checks {
		if !c.ok {
			return errors.New(c.fail)
		}
	}
	d.rec.summarize(job, summary)
	d.rec.say("  checked in the database: job %d %s.", job, summary)
	return nil
}

// ---------------------------------------------------------------------------
// Story 2: a frozen worker loses its job only after expiry.

func (d *demo) storyFrozenWorker(ctx context.Context) error {
	const story = 2
	queue := d.queues[1]
	d.rec.story(story, "a frozen worker loses its job only after the database sees the lease expire",
		"worker-a claims a job, renews twice, then freezes: its heartbeat stops reaching the database while its handler\n"+
			"keeps running. worker-b takes over only once the lease has expired by the database clock; worker-a's late\n"+
			"completion is then refused and its target write rolled back.")
	a := d.newWorker(ctx, story, "worker-a")
	defer a.close()
	b := d.newWorker(ctx, story, "worker-b")
	defer b.close()

	id, err := d.enqueue(ctx, story, queue, "a nightly load")
	if err != nil {
		return err
	}
	job, err := a.client.Claim(ctx, queue)
	if err != nil {
		return err
	}
	d.claimEvent(story, a, job)
	lease := a.client.Keep(ctx, job)
	defer lease.Stop()
	trustLost := make(chan struct{})
	context.AfterFunc(lease.Context(), func() {
		if errors.Is(context.Cause(lease.Context()), goclient.ErrTrustDeadlinePassed) {
			d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: a.label, Kind: evTrustLost,
				Text: fmt.Sprintf("gives up job %d in its client: no renewal was confirmed before the local trust deadline "+
					"(granted lease minus the %s safety margin); the client cancels the handler's context, but this frozen handler does not look",
					id, textfmt.Duration(demoSafetyMargin))})
		}
		close(trustLost)
	})
	if err := a.port.waitRenewals(ctx, id, 2, 4*demoRenewalInterval); err != nil {
		return err
	}
	a.port.freeze()
	seen := a.port.last(id)
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: a.label, Kind: evFrozen,
		Text: "freezes: its renewals stop reaching the database (the demo stalls them); its handler is still running"})

	// worker-b asks for work at once, in its own session: the lease is live,
	// so the database gives it nothing. (Were it given the job, the story
	// fails here, and the job's lease runs out on its own.)
	if early, err := b.client.Claim(ctx, queue); !errors.Is(err, goclient.ErrNoJob) {
		return fmt.Errorf("worker-b asked for work while job %d's lease was live (until %s) and was not told there is none: "+
			"claimed job %d, error %v", id, clockTime(seen.expires), early.ID(), err)
	}
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: b.label, Kind: evNoJob,
		Text: fmt.Sprintf("asks for work on the queue: nothing claimable, job %d's lease is live until %s", id, clockTime(seen.expires))})

	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		d.watchExpiry(ctx, story, id, seen)
	}()
	defer watch.Wait()

	claimedB := make(chan goclient.Job, 1)
	workerB := must(b.client.NewWorker(goclient.WorkerConfig{Queue: queue, PollInterval: demoPollInterval,
		ShutdownTimeout: time.Second, TxHandler: func(jctx context.Context, tx pgx.Tx, job goclient.Job) error {
			d.claimEvent(story, b, job)
			offer(claimedB, job)
			if err := sleep(jctx, 500*time.Millisecond); err != nil {
				return context.Cause(jctx)
			}
			if err := d.writeTarget(jctx, tx, b.label, job); err != nil {
				return err
			}
			d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: job.ID(), Actor: b.label, Kind: evTargetWrite,
				Text: fmt.Sprintf("writes its target row (generation %d) and calls complete_job in the same transaction",
					job.FencingGeneration())})
			return nil
		}}))
	stopB := runWorkers(ctx, workerB)
	defer stopB() //nolint:errcheck
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: b.label, Kind: evPolling,
		Text: fmt.Sprintf("starts its worker loop on the queue, polling every %s", textfmt.Duration(demoPollInterval))})
	jobB, err := receive(ctx, claimedB, 3*demoLeaseDuration, "worker-b's reclaim")
	if err != nil {
		return err
	}
	stB, seenAt, err := d.waitFinal(ctx, id, 10*time.Second)
	if err != nil {
		return err
	}
	d.rec.emit(demoEvent{At: seenAt, Story: story, Job: id, Actor: b.label, Kind: evCompleted,
		Text: fmt.Sprintf("completed job %d: %s under fencing generation %d", id, stB.Status, stB.FencingGeneration)})
	if err := stopB(); err != nil {
		return err
	}

	// worker-a's handler wakes up and tries to finish, as a stale worker
	// would. (A goclient Worker would not even try: its lease context is
	// cancelled. The demo makes the call to show that the database refuses
	// it.)
	if _, err := receive(ctx, trustLost, 2*demoLeaseDuration, "worker-a's loss of trust"); err != nil {
		return err
	}
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // rolled back below on the normal path
	if err := d.writeTarget(ctx, tx, a.label, job); err != nil {
		return err
	}
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: a.label, Kind: evTargetWrite,
		Text: "wakes up, writes its target row (generation 1) and calls complete_job in the same transaction"})
	completeErr := a.client.CompleteTx(ctx, tx, job.Claim(), nil)
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	var pgErr *pgconn.PgError
	if !errors.Is(completeErr, goclient.ErrStaleClaim) || !errors.As(completeErr, &pgErr) || pgErr.Code != goclient.SQLStateStaleClaim {
		return fmt.Errorf("worker-a's late complete_job was not refused with SQLSTATE LF001: %v", completeErr)
	}
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: a.label, Kind: evRefused,
		Text: "is refused: complete_job raised SQLSTATE LF001 (stale claim), so its whole transaction rolled back, target write included"})

	rows, _ := a.pool.Query(ctx, `SELECT written_by, lease_fencing_generation FROM `+d.targetTable+
		` WHERE job_record_id = $1 ORDER BY lease_fencing_generation`, id)
	type targetRow struct {
		WrittenBy  string
		Generation int64
	}
	written, err := pgx.CollectRows(rows, pgx.RowToStructByPos[targetRow])
	if err != nil {
		return err
	}
	var described []string
	for _, r := range written {
		described = append(described, fmt.Sprintf("%s's (generation %d)", r.WrittenBy, r.Generation))
	}
	d.rec.emit(demoEvent{At: d.dbNow(), Story: story, Job: id, Actor: "database", Kind: evChecked,
		Text: fmt.Sprintf("shows %d target row(s) for job %d: %s", len(written), id, joinOrNone(described, ", "))})

	return d.conclude(id, fmt.Sprintf("SUCCEEDED by worker-b (generation 2), reclaimed %.0f ms after the database saw worker-a's lease expire; "+
		"worker-a's late completion refused with LF001, its target row rolled back",
		float64(jobB.DatabaseTime().Sub(seen.expires).Milliseconds())),
		demoCheck{jobB.DatabaseTime().After(seen.expires), fmt.Sprintf("worker-b reclaimed job %d at %s, not after its lease expired at %s",
			id, clockTime(jobB.DatabaseTime()), clockTime(seen.expires))},
		demoCheck{stB.Status == goclient.StatusSucceeded && stB.FencingGeneration == 2 && jobB.FencingGeneration() == 2, fmt.Sprintf(
			"job %d ended %s under generation %d, want SUCCEEDED by worker-b under generation 2", id, stB.Status, stB.FencingGeneration)},
		demoCheck{len(written) == 1 && written[0].WrittenBy == b.label && written[0].Generation == 2,
			fmt.Sprintf("the target table holds %d row(s) for job %d, want only worker-b's", len(written), id)})
}

// watchExpiry records the moment the database clock passes the lease's
// expiry: it sleeps until then on the local monotonic clock (from the last
// answer), then asks the database until its clock agrees.
func (d *demo) watchExpiry(ctx context.Context, story int, job int64, seen portSeen) {
	due := seen.local.Add(seen.expires.Sub(seen.dbTime))
	for wait := time.Until(due); sleep(ctx, wait) == nil; wait = 10 * time.Millisecond {
		if d.dbNow().After(seen.expires) {
			d.rec.emit(demoEvent{At: seen.expires, Story: story, Job: job, Actor: "database", Kind: evExpired,
				Text: fmt.Sprintf("clock passes job %d's lease_expires_at: the lease has expired; the job is still RUNNING and may be reclaimed", job)})
			return
		}
	}
}

// ---------------------------------------------------------------------------
// Story 3: an operator cancels a running job.

// handlerStop is when and why a handler stopped.
type handlerStop struct {
	local time.Time
	at    time.Time
	cause error
}

func (d *demo) storyCancel(ctx context.Context) error {
	const story = 3
	queue := d.queues[2]
	d.rec.story(story, "an operator cancels a running job and the handler stops within one renewal interval",
		fmt.Sprintf("worker-c runs a job that would take 30 s. The operator cancels it with cancel_job: the claim is stale\n"+
			"at once, the next renewal (at most %s later) says so, and the client cancels the handler's context.",
			textfmt.Duration(demoRenewalInterval)))
	c := d.newWorker(ctx, story, "worker-c")
	defer c.close()
	claimed := make(chan goclient.Job, 1)
	stopped := make(chan handlerStop, 1)
	// The handler stands for a 30 s job: it only waits for its context,
	// which the cancel (or the story's end) cancels well before that.
	workerC := must(c.client.NewWorker(goclient.WorkerConfig{Queue: queue, PollInterval: demoPollInterval,
		ShutdownTimeout: time.Second, Handler: func(jctx context.Context, job goclient.Job) error {
			d.claimEvent(story, c, job)
			offer(claimed, job)
			<-jctx.Done()
			offer(stopped, handlerStop{local: time.Now(), at: d.dbNow(), cause: context.Cause(jctx)})
			return context.Cause(jctx)
		}}))
	stopC := runWorkers(ctx, workerC)
	defer stopC() //nolint:errcheck
	id, err := d.enqueue(ctx, story, queue, "a 30 s backfill")
	if err != nil {
		return err
	}
	job, err := receive(ctx, claimed, 10*time.Second, "worker-c's claim")
	if err != nil {
		return err
	}
	claimedLocal := time.Now()
	if err := sleep(ctx, 2*demoRenewalInterval+demoRenewalInterval/2-time.Since(claimedLocal)); err != nil {
		return err
	}
	cancelSent := time.Now()
	cancelled, err := d.operator.admin.Cancel(ctx, id, goclient.ChangeRecord{})
	if err != nil {
		return err
	}
	if !cancelled {
		return fmt.Errorf("cancel_job(%d) returned false for a running job", id)
	}
	cancelAt := d.dbNow()
	d.rec.emit(demoEvent{At: cancelAt, Story: story, Job: id, Actor: "operator", Kind: evCancelled,
		Text: fmt.Sprintf("cancels job %d with cancel_job: it is CANCELLED, and its claim is stale from this moment", id)})
	stop, err := receive(ctx, stopped, 2*demoRenewalInterval+demoAttemptTimeout, "worker-c's handler stop")
	if err != nil {
		return err
	}
	delay := stop.local.Sub(cancelSent)
	d.rec.emit(demoEvent{At: stop.at, Story: story, Job: id, Actor: c.label, Kind: evHandlerStopped,
		Text: fmt.Sprintf("stops its handler %d ms after the cancel was sent (the renewal interval is %s): "+
			"the client cancelled the handler's context, cause: %v", delay.Milliseconds(), textfmt.Duration(demoRenewalInterval), stop.cause)})
	if err := stopC(); err != nil {
		return err
	}
	st, err := d.producer.admin.State(ctx, id)
	if err != nil {
		return err
	}
	return d.conclude(id, fmt.Sprintf("CANCELLED by the operator %.1f s into the claim; the handler stopped %d ms later (renewal interval %s)",
		cancelAt.Sub(job.DatabaseTime()).Seconds(), delay.Milliseconds(), textfmt.Duration(demoRenewalInterval)),
		demoCheck{st.Status == goclient.StatusCancelled, fmt.Sprintf("job %d is %s after the cancel, want CANCELLED", id, st.Status)},
		demoCheck{errors.Is(stop.cause, goclient.ErrStaleClaim), fmt.Sprintf("worker-c's handler stopped for %v, want a stale claim", stop.cause)},
		demoCheck{delay <= demoRenewalInterval+demoAttemptTimeout, fmt.Sprintf(
			"worker-c's handler stopped %s after the cancel, more than one renewal interval and one attempt", delay)})
}

// ---------------------------------------------------------------------------
// The end: evidence and the HTML timeline.

// printEvidence prints a short evidence summary of the run from the
// auditor functions, as the demo's operator login.
func (d *demo) printEvidence(ctx context.Context) error {
	out := d.out
	c := d.operator.admin
	// Everything is read before anything is printed: a failed read prints
	// no half summary.
	mv, mvErr := c.BundleMigrationVersion(ctx)
	records, recordsErr := c.ControlEvidence(ctx, d.startedAt)
	outcomes, outcomesErr := c.LeaseOutcomeTotals(ctx, d.startedAt)
	statuses, statusesErr := c.JobStatusTotals(ctx)
	report, auditErr := audit.Run(ctx, d.operator.pool)
	if err := cmp.Or(mvErr, recordsErr, outcomesErr, statusesErr, auditErr); err != nil {
		return err
	}
	printf(out, "\nEvidence of this run (auditor functions; no payload, token, owner id or job id):\n")
	printf(out, "  bundle migration version %d, applied %s (leasectl carries version %d)\n",
		mv.Version, textfmt.Time(mv.AppliedAt), sqlbundle.NewestVersion())
	printf(out, "  control evidence recorded during the run: %d record(s)\n", len(records))
	for _, r := range records {
		queue := ""
		if r.Queue != "" {
			queue = " " + r.Queue
		}
		printf(out, "    #%d %s %s%s by %s: %q\n      new values %s\n", r.ID, textfmt.Time(r.RecordedAt), r.Kind, queue,
			r.ChangedByRole, textfmt.OneLine(r.Reason), textfmt.CompactJSON(r.NewValues))
	}
	var parts []string
	for _, o := range outcomes {
		if d.isDemoQueue(o.Queue) {
			parts = append(parts, fmt.Sprintf("%s %s %d", o.Queue, o.Outcome, o.Count))
		}
	}
	printf(out, "  rare lease outcomes in the demo queues: %s\n", joinOrNone(parts, "; "))
	parts = nil
	for _, s := range statuses {
		if d.isDemoQueue(s.Queue) {
			parts = append(parts, fmt.Sprintf("%s %s %d", s.Queue, s.Status, s.Count))
		}
	}
	printf(out, "  jobs by status in the demo queues: %s\n", joinOrNone(parts, "; "))
	verdict := fmt.Sprintf("%d finding(s); run leasectl audit for them", report.Findings)
	if report.Passed {
		verdict = fmt.Sprintf("passed, %d checks, no findings", len(report.Checks))
	}
	printf(out, "  leasectl audit: %s\n", verdict)
	if d.opts.DatabaseURL != "" {
		printf(out, "  the full report: leasectl evidence --since %s --database-url ...\n", d.startedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// isDemoQueue reports whether queue is one of this run's.
func (d *demo) isDemoQueue(queue string) bool {
	return slices.Contains(d.queues[:], queue)
}

// joinOrNone joins parts with sep, or says "none".
func joinOrNone(parts []string, sep string) string {
	return cmp.Or(strings.Join(parts, sep), "none")
}

// writeTimeline writes the HTML timeline of the events so far and prints
// its path; after an interrupt it writes nothing.
func (d *demo) writeTimeline(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	path := cmp.Or(d.opts.HTMLPath, filepath.Join(os.TempDir(), "leasefence-demo-"+d.run+".html"))
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	events, stories, summaries := d.rec.snapshot()
	page := timelinePage{
		Title:     "leasefence demo: lease timeline",
		StartedAt: textfmt.Time(d.startedAt),
		Where:     d.where,
		Policy: fmt.Sprintf("Lease %s, renewal interval %s, client safety margin %s. Times are the database's clock.",
			textfmt.Duration(demoLeaseDuration), textfmt.Duration(demoRenewalInterval), textfmt.Duration(demoSafetyMargin)),
		GeneratedBy: "Written by leasectl demo.",
	}
	// The template is fixed and escapes every value: rendering fails only on
	// a bug in the template.
	html := must(renderTimeline(page, events, stories, summaries))
	if err := os.WriteFile(path, html, 0o666); err != nil {
		return err
	}
	printf(d.out, "\nLease timeline (self-contained HTML, open it in a browser): %s\n", path)
	return nil
}

// randomName returns 2n random lowercase hex digits.
func randomName(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
