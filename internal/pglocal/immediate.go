package pglocal

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// RestartImmediate stops the server the way `pg_ctl stop -m immediate`
// does (SIGQUIT to the postmaster: no checkpoint, every backend ends at
// once, crash recovery at the next start) and starts it again on the same
// port with the same data. Every open connection is cut. It is the crash
// fault of the reliability campaign; Restart is the orderly one.
func (c *Cluster) RestartImmediate(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("pglocal: cluster already stopped")
	}
	port, cmd, exited := c.port, c.server, c.exited
	c.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
	}
	if err := c.startServer(ctx, port, 60*time.Second); err != nil {
		return fmt.Errorf("pglocal: restart after immediate stop: %w", err)
	}
	c.logf("pglocal: PostgreSQL restarted after an immediate stop on 127.0.0.1:%d", port)
	return nil
}
