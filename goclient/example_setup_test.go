package goclient_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// envExampleDatabaseURL is the variable the package Examples read.
const envExampleDatabaseURL = "LEASEFENCE_EXAMPLE_DATABASE_URL"

// prepareExampleDatabase does, on a throwaway database of the test server,
// what the README's "Getting started" tells a user to do (bundle applied,
// one login granted durable_job_producer and durable_job_worker, the
// queues' lease policies, the examples' target table), sets
// LEASEFENCE_EXAMPLE_DATABASE_URL to that login, and returns the function
// that removes them from an external test server after
// testdb.Run. It starts the binary's test server, so call it before
// testdb.Run.
func prepareExampleDatabase(ctx context.Context) (cleanup func(), err error) {
	db, err := testdb.Open(ctx)
	if err != nil {
		return nil, err
	}
	admin, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	var b [8]byte
	_, _ = rand.Read(b[:])
	login, password := "lf_example_"+hex.EncodeToString(b[:4]), hex.EncodeToString(b[4:])+"Ex"
	for _, sql := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, login, password),
		fmt.Sprintf(`GRANT durable_job_producer, durable_job_worker TO %s`, login),
		`SELECT durable_jobs.set_queue_lease_policy(q, '3 s', '1 s', '1 h', true, 'examples')
		 FROM unnest(ARRAY['etl.orders', 'etl.totals', 'etl.keep', 'etl.typed']) AS q`,
		`CREATE TABLE public.order_totals (job_record_id bigint PRIMARY KEY, fencing_generation bigint, total numeric)`,
		`GRANT INSERT ON public.order_totals TO durable_job_worker`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("prepare the example database: %w", err)
		}
	}
	u, err := url.Parse(db.URL)
	if err != nil {
		return nil, err
	}
	u.User = url.UserPassword(login, password)
	if err := os.Setenv(envExampleDatabaseURL, u.String()); err != nil {
		return nil, err
	}
	// testdb.Run stops a throwaway cluster after the Examples (the last
	// thing m.Run runs), which removes everything; on a server given by
	// LEASEFENCE_TEST_DATABASE_URL this removes the database and the login.
	maintenance := *u
	maintenance.User, maintenance.Path = nil, "/postgres"
	if admin, err := url.Parse(db.URL); err == nil {
		maintenance.User = admin.User
	}
	return func() {
		c, err := pgx.Connect(ctx, maintenance.String())
		if err != nil {
			return // the throwaway cluster is gone, and the example database with it
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+db.Name+" WITH (FORCE)")
		_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+login)
	}, nil
}
