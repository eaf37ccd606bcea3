package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/goclient"
)

// order is the payload of one job.
type order struct {
	OrderID    int64       `json:"order_id"`
	CustomerID int64       `json:"customer_id"`
	Lines      []orderLine `json:"lines"`
}

// orderLine is one line of an order.
type orderLine struct {
	SKU            string `json:"sku"`
	Quantity       int64  `json:"quantity"`
	UnitPriceCents int64  `json:"unit_price_cents"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Getenv, logger); err != nil {
		fmt.Fprintln(os.Stderr, "etlworker:", err)
		os.Exit(1)
	}
}

// settings are the worker's environment settings.
type settings struct {
	databaseURL  string
	queue        string
	safetyMargin time.Duration
	concurrency  int
}

// readSettings reads the settings from getenv, with their defaults.
func readSettings(getenv func(string) string) (settings, error) {
	s := settings{databaseURL: getenv("LEASEFENCE_DATABASE_URL"), queue: getenv("LEASEFENCE_QUEUE"),
		safetyMargin: 5 * time.Second, concurrency: 4}
	if s.databaseURL == "" {
		return s, errors.New("LEASEFENCE_DATABASE_URL is not set: give a URL of a login granted durable_job_worker")
	}
	if s.queue == "" {
		s.queue = "etl.orders"
	}
	if v := getenv("LEASEFENCE_SAFETY_MARGIN"); v != "" {
		parsed, err := time.ParseDuration(v)
		if err != nil {
			return s, fmt.Errorf("LEASEFENCE_SAFETY_MARGIN: %w", err)
		}
		s.safetyMargin = parsed
	}
	if v := getenv("LEASEFENCE_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return s, fmt.Errorf("LEASEFENCE_CONCURRENCY: %w", err)
		}
		s.concurrency = n
	}
	if s.concurrency < 1 {
		return s, errors.New("LEASEFENCE_CONCURRENCY must be at least 1")
	}
	return s, nil
}

// run works the queue until ctx is cancelled.
func run(ctx context.Context, getenv func(string) string, logger *slog.Logger) error {
	s, err := readSettings(getenv)
	if err != nil {
		return err
	}
	// The pool needs a connection per running job (each TxHandler holds one
	// for its transaction) plus one to claim with; the heartbeat has its own.
	poolConfig, err := goclient.ParsePoolConfig(s.databaseURL, 0)
	if err != nil {
		return fmt.Errorf("parse LEASEFENCE_DATABASE_URL: %w", err)
	}
	poolConfig.MaxConns = int32(s.concurrency + 1)
	pool, err := pgxpool.NewWithConfig(ctx, poolConfig)
	if err != nil {
		return err
	}
	defer pool.Close()

	// The lease and the renewal interval are the queue's policy in the
	// database: each claim brings them, and the client keeps each claim by
	// its own. A policy this margin cannot keep safe is refused, claim by
	// claim, with a message naming the queue and both values.
	client, err := goclient.NewClient(pool, goclient.Config{SafetyMargin: s.safetyMargin, Logger: logger})
	if err != nil {
		return err
	}
	defer client.Close()

	worker, err := client.NewWorker(goclient.WorkerConfig{
		Queue:       s.queue,
		Concurrency: s.concurrency,
		TxHandler:   goclient.JSONTxHandler(loadOrder),
	})
	if err != nil {
		return err
	}
	logger.Info("etlworker: working", "queue_name", s.queue, "concurrency", s.concurrency)
	return worker.Run(ctx)
}

// loadOrder writes one order's total into the target table, in tx: the
// worker then calls complete_job in the same transaction and commits. The
// fencing generation is stored with the row, for sinks downstream.
func loadOrder(ctx context.Context, tx pgx.Tx, job goclient.Job, o order) error {
	if len(o.Lines) == 0 {
		return goclient.FailPermanently("order_without_lines", nil)
	}
	var totalCents int64
	for _, line := range o.Lines {
		totalCents += line.Quantity * line.UnitPriceCents
	}
	// A plain INSERT into a table with unique keys: were an order or a job
	// ever written twice, the second write would fail and show, where an
	// upsert would hide it.
	_, err := tx.Exec(ctx, `
		INSERT INTO public.etl_order_totals (order_id, customer_id, total_cents, job_record_id, lease_fencing_generation)
		VALUES ($1, $2, $3, $4, $5)`,
		o.OrderID, o.CustomerID, totalCents, job.ID(), job.FencingGeneration())
	return err // a database error retries the job (reason handler_error)
}
