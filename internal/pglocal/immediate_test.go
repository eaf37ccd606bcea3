package pglocal

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRestartImmediate checks that a committed row survives an immediate
// stop (crash recovery) and that a connection open across it is cut.
func TestRestartImmediate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE survivor (v int); INSERT INTO survivor VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartImmediate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a connection open across the immediate stop still works")
	}
	conn2, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	var v int
	if err := conn2.QueryRow(ctx, `SELECT v FROM survivor`).Scan(&v); err != nil || v != 7 {
		t.Fatalf("committed row after crash recovery: %d, %v", v, err)
	}
}
