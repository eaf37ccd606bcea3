package pglocal

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStandbyFailover builds a synchronous streaming standby, checks that
// a commit acknowledged on the primary is on the standby, stops the
// primary immediately, promotes the standby and writes to it, and reaches
// it through a multi-host URL with target_session_attrs=read-write.
func TestStandbyFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop() }()
	s, err := p.StartStandby(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	pc, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(ctx)
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = 's1'`, `SELECT pg_reload_conf()`} {
		if _, err := pc.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var state string
	for i := 0; i < 100 && state != "sync"; i++ {
		_ = pc.QueryRow(ctx, `SELECT sync_state FROM pg_stat_replication WHERE application_name = 's1'`).Scan(&state)
		time.Sleep(50 * time.Millisecond)
	}
	if state != "sync" {
		t.Fatalf("standby replication state %q, want sync", state)
	}
	if _, err := pc.Exec(ctx, `CREATE TABLE acked (v int); INSERT INTO acked VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := p.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	if err := s.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	multi := "postgres://postgres@127.0.0.1:" + itoa(p.Port()) + ",127.0.0.1:" + itoa(s.Port()) +
		"/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
	sc, err := pgx.Connect(ctx, multi)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close(ctx)
	var n int
	if err := sc.QueryRow(ctx, `SELECT count(*) FROM acked`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("acknowledged row after failover: %d, %v", n, err)
	}
	if _, err := sc.Exec(ctx, `INSERT INTO acked VALUES (2)`); err != nil {
		t.Fatalf("the promoted standby refuses writes: %v", err)
	}
	if sc.PgConn().Conn().RemoteAddr().String() != "127.0.0.1:"+itoa(s.Port()) {
		t.Fatalf("connected to %s, want the promoted standby", sc.PgConn().Conn().RemoteAddr())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
