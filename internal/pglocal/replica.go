package pglocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby makes a streaming standby of c: pg_basebackup -R (which
// writes standby.signal and the primary's connection into the copy) into a
// new cluster folder, started on a free port with c's server settings.
// The standby connects with application_name name, so that c can list it
// in synchronous_standby_names. It returns once the standby accepts
// (read-only) connections. The caller must Stop it like any cluster.
func (c *Cluster) StartStandby(ctx context.Context, name string) (*Cluster, error) {
	rootDir, err := os.MkdirTemp(filepath.Dir(c.rootDir), "pglocal-standby-")
	if err != nil {
		return nil, fmt.Errorf("pglocal: make standby folder: %w", err)
	}
	s := &Cluster{
		binDir:    c.binDir,
		rootDir:   rootDir,
		dataDir:   filepath.Join(rootDir, "data"),
		socketDir: filepath.Join(rootDir, "socket"),
		logPath:   filepath.Join(rootDir, "server.log"),
		superuser: c.superuser,
		account:   c.account,
		logf:      c.logf,
	}
	if err := s.createStandby(ctx, c, name); err != nil {
		_ = s.cleanup()
		return nil, err
	}
	register(s, false)
	s.logf("pglocal: standby %q of port %d listening on 127.0.0.1:%d", name, c.Port(), s.Port())
	return s, nil
}

// createStandby is the work of StartStandby after the folder exists.
func (s *Cluster) createStandby(ctx context.Context, primary *Cluster, name string) error {
	if err := os.Mkdir(s.socketDir, 0o700); err != nil {
		return fmt.Errorf("pglocal: make socket folder: %w", err)
	}
	for _, p := range []string{s.rootDir, s.socketDir} {
		if err := s.account.chown(p); err != nil {
			return err
		}
	}
	if err := s.startReaper(); err != nil {
		return err
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=%s application_name=%s", primary.Port(), primary.superuser, name)
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "pg_basebackup"),
		"-D", s.dataDir, "-R", "-X", "stream", "-c", "fast", "-d", conninfo)
	cmd.Dir = s.rootDir
	cmd.Env = s.childEnv()
	cmd.SysProcAttr = s.account.sysProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pglocal: pg_basebackup failed: %v\n%s", err, tail(out, 20))
	}
	// The primary's arguments, with this cluster's socket folder and the
	// standby's own primary_conninfo (command-line settings win over the
	// one pg_basebackup -R wrote).
	for _, a := range primary.args {
		if strings.HasPrefix(a, "unix_socket_directories=") {
			a = "unix_socket_directories=" + s.socketDir
		}
		s.args = append(s.args, a)
	}
	s.args = append(s.args, "-c", "primary_conninfo="+conninfo)
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		lastErr = s.startServer(ctx, port, 60*time.Second)
		if !errors.Is(lastErr, errPortTaken) {
			return lastErr
		}
	}
	return lastErr
}

// WaitReplayedFrom waits until c, a standby of primary, has replayed
// everything primary has written so far, or ctx ends.
func (c *Cluster) WaitReplayedFrom(ctx context.Context, primary *Cluster) error {
	p, err := pgx.Connect(ctx, primary.URL("postgres"))
	if err != nil {
		return err
	}
	defer p.Close(context.WithoutCancel(ctx))
	var lsn string
	if err := p.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return err
	}
	s, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))
	for {
		var replayed bool
		if err := s.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&replayed); err != nil {
			return err
		}
		if replayed {
			return nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("pglocal: the standby on port %d never replayed the primary's WAL up to %s: %w",
				c.Port(), lsn, context.Cause(ctx))
		}
	}
}

// CutReplication makes c's standbys stop receiving WAL while every server
// keeps running: c's pg_hba.conf refuses replication connections from now
// on (a reject line at its top, reloaded), and c's walsenders are ended
// until none comes back (pg_reload_conf only signals, so a walsender ended
// before the postmaster has read the file again could reconnect). It gives
// up after 20 s.
func (c *Cluster) CutReplication(ctx context.Context) error {
	hba := filepath.Join(c.dataDir, "pg_hba.conf")
	old, err := os.ReadFile(hba)
	if err != nil {
		return err
	}
	if err := os.WriteFile(hba, append([]byte("host replication all all reject\n"), old...), 0o600); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return err
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_replication`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			time.Sleep(300 * time.Millisecond)
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication`).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return fmt.Errorf("pglocal: the standbys of port %d keep streaming", c.Port())
}

// Promote turns a standby into a primary with pg_ctl promote and waits
// until it accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "pg_ctl"), "promote", "-D", c.dataDir, "-w", "-t", "60")
	cmd.Dir = c.rootDir
	cmd.Env = c.childEnv()
	cmd.SysProcAttr = c.account.sysProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pglocal: pg_ctl promote failed: %v\n%s", err, tail(out, 20))
	}
	c.logf("pglocal: standby on port %d promoted", c.Port())
	return nil
}

// StopImmediate stops the server as `pg_ctl stop -m immediate` does
// (SIGQUIT: no checkpoint, every connection cut) and leaves it stopped; the
// folder stays until Stop. It is the "old primary dies" half of a
// failover.
func (c *Cluster) StopImmediate() error {
	c.mu.Lock()
	cmd, exited := c.server, c.exited
	c.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return errors.New("pglocal: no server to stop")
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
	c.logf("pglocal: PostgreSQL on port %d stopped (immediate)", c.Port())
	return nil
}
