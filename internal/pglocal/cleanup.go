package pglocal

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

// reaperScript runs in a separate process. It blocks reading its standard
// input, a pipe whose only writer is the calling process; the read returns
// when that process ends in any way. It then stops the postmaster named in
// the data directory's postmaster.pid (if it is still a postgres process)
// and removes the cluster folder. $1 is the data directory, $2 the folder.
const reaperScript = `read -r _ || true
pidfile="$1/postmaster.pid"
if [ -f "$pidfile" ]; then
  pid=$(head -n 1 "$pidfile")
  if [ -n "$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = postgres ]; then
    kill -QUIT "$pid" 2>/dev/null
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    kill -KILL "$pid" 2>/dev/null
  fi
fi
rm -rf "$2"
`

// startReaper starts the watcher process described in the package
// documentation.
func (c *Cluster) startReaper() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pglocal: make reaper pipe: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "pglocal-reaper", c.dataDir, c.rootDir)
	cmd.Stdin = r
	// Its own process group: a Ctrl-C in the terminal must not kill it
	// before it has cleaned up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("pglocal: start reaper: %w", err)
	}
	r.Close()
	c.reaper, c.reaperWrite = cmd, w
	return nil
}

// stopReaper ends the watcher without letting it act: Stop does the
// cleaning itself.
func (c *Cluster) stopReaper() {
	if c.reaper == nil {
		return
	}
	_ = c.reaper.Process.Kill()
	_ = c.reaper.Wait()
	_ = c.reaperWrite.Close()
	c.reaper = nil
}

// registry holds the running clusters the signal handler must stop.
var registry = struct {
	sync.Mutex
	clusters map[*Cluster]bool
	once     sync.Once
}{clusters: map[*Cluster]bool{}}

// register records c and, when handle is true, makes sure the signal
// handler runs and will stop c.
func register(c *Cluster, handle bool) {
	if !handle {
		return
	}
	registry.Lock()
	registry.clusters[c] = true
	registry.Unlock()
	registry.once.Do(func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-signals
			stopAllAndExit(sig)
		}()
	})
}

// unregister forgets c.
func unregister(c *Cluster) {
	registry.Lock()
	delete(registry.clusters, c)
	registry.Unlock()
}

// stopAllAndExit stops every registered cluster and exits with the
// conventional status for death by sig (128 + its number).
func stopAllAndExit(sig os.Signal) {
	registry.Lock()
	all := make([]*Cluster, 0, len(registry.clusters))
	for c := range registry.clusters {
		all = append(all, c)
	}
	registry.Unlock()
	for _, c := range all {
		_ = c.Stop()
	}
	code := 1
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	fmt.Fprintf(os.Stderr, "pglocal: %v received; stopped %d PostgreSQL cluster(s)\n", sig, len(all))
	os.Exit(code)
}
