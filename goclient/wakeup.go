package goclient

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"
)

// Wake-ups (migration 027): the trigger job_record_wake_workers notifies a
// queue's wake-up channel when one of its jobs becomes QUEUED or
// RETRY_SCHEDULED, and a Worker listens there on a connection of its own
// (not one of the pool's), so an idle worker claims a new job at once
// instead of at its next poll. Polling stays: a worker whose listener is
// down (a lost connection, a failover, a pooler that cannot carry LISTEN)
// claims every PollInterval as before.

// wakeChannelPrefix starts every wake-up channel's name.
const wakeChannelPrefix = "leasefence_wake_"

// wakeChannel is the wake-up channel of queue, as the trigger of migration
// 027 names it: the prefix and the first 16 hex digits of md5(queue). The
// queue's name is not in it (any login may LISTEN on any channel).
func wakeChannel(queue string) string {
	sum := md5.Sum([]byte(queue))
	return wakeChannelPrefix + hex.EncodeToString(sum[:])[:16]
}

// Listener timing.
const (
	// listenProbeTimeout is how long the listener waits for its probe
	// notification before it decides that LISTEN does not work on its
	// connection.
	listenProbeTimeout = 5 * time.Second
	// listenBackoffMin and listenBackoffMax bound the wait before the
	// listener connects again after it lost its connection or could not
	// open one: the first wait is the minimum, each next one doubles.
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 10 * time.Second
	// minDueWait is the shortest wait for the next due job, and the first
	// wait for a job the database says is due now that the claim just made
	// did not get (another session holds its row); each such wait in a row
	// doubles, up to PollInterval, so a row held for long costs a few
	// claims, not a tight loop.
	minDueWait = 20 * time.Millisecond
	// wakeCooldown is the least time between two claims woken by the
	// wake-up listener when the first found nothing.
	wakeCooldown = 50 * time.Millisecond
)

// errNoNotifications: LISTEN succeeded but the probe notification sent from
// another session never came (a pooler in transaction mode).
var errNoNotifications = errors.New("leasefence: LISTEN delivers no notifications on this connection")

// arrive wakes the claim loop: its queue may have work.
func (w *Worker) arrive() {
	select {
	case w.arrived <- struct{}{}:
	default:
	}
}

// listen keeps a LISTEN on the worker's queue's wake-up channel until ctx
// ends, connecting again after each loss (waiting listenBackoffMin,
// doubled after each failure up to listenBackoffMax, reset once a
// connection listens), and wakes the claim loop on every notification and
// on every new connection (work may have come while nobody listened). When
// LISTEN delivers nothing (errNoNotifications) it says so once and stops:
// the worker polls.
func (w *Worker) listen(ctx context.Context) {
	queue := slog.String("queue_name", w.cfg.Queue)
	backoff := listenBackoffMin
	lost := false
	for {
		err := w.listenOnce(ctx, func() {
			backoff = listenBackoffMin
			if lost {
				lost = false
				w.log(slog.LevelInfo, "leasefence: wake-up listener back", queue)
			}
		})
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errNoNotifications):
			w.log(slog.LevelWarn, "leasefence: LISTEN gets no notifications on this connection "+
				"(a pooler in transaction mode?): the worker polls every PollInterval", queue,
				slog.Duration("poll_interval", w.cfg.PollInterval))
			return
		case !lost:
			lost = true
			w.log(slog.LevelWarn, "leasefence: wake-up listener lost, polling until it is back", queue,
				slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listenOnce opens the listener's connection, LISTENs on a probe channel
// of its own and on the wake-up channel, checks with a probe notification
// sent from the pool (another session) that notifications reach it, calls
// listening, and then wakes the claim loop on each notification until the
// connection fails or ctx ends. It returns why it stopped.
func (w *Worker) listenOnce(ctx context.Context, listening func()) error {
	conn, err := w.connectListener(ctx, w.c.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	probe := "leasefence_probe_" + hex.EncodeToString(b[:])
	_, err = conn.Exec(ctx, listenStatement(probe, wakeChannel(w.cfg.Queue)))
	if err == nil {
		err = notifyProbe(ctx, w.c.pool, probe)
	}
	if err == nil {
		// Any notification proves that LISTEN works here: the probe, or a
		// wake-up that came first.
		pctx, cancel := context.WithTimeout(ctx, w.listenProbeTimeout)
		_, err = conn.WaitForNotification(pctx)
		cancel()
		if err != nil && ctx.Err() == nil && pctx.Err() != nil && !conn.IsClosed() {
			// Best effort: a pooler may keep the server session (and its
			// LISTENs) for other clients.
			unlistenAll(ctx, conn)
			return errNoNotifications
		}
	}
	if err != nil {
		return err
	}
	w.log(slog.LevelDebug, "leasefence: listening for new jobs", slog.String("queue_name", w.cfg.Queue))
	listening()
	w.arrive()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		w.arrive()
	}
}
