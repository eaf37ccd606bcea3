package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Options says how to start a cluster. The zero value is a valid choice:
// default PostgreSQL settings, superuser "postgres", progress discarded.
type Options struct {
	// BinDir is the folder holding initdb and postgres. When empty, Start
	// uses FindBinDir.
	BinDir string

	// Settings are extra server settings, each passed to postgres as
	// `-c name=value`, for example {"fsync": "off"} in tests that do not
	// need durability. Setting "fsync" to "off" also makes initdb skip its
	// final sync. Start sets listen_addresses, port and
	// unix_socket_directories itself; they cannot be given here.
	Settings map[string]string

	// SharedPreloadLibraries lists the libraries the server loads at start
	// (the shared_preload_libraries setting), for example "plpgsql_check".
	SharedPreloadLibraries []string

	// TLS, when set, starts the server with ssl = on and this certificate
	// and key (written into the cluster's folder, the key readable by the
	// server's account only). Clients may still connect without TLS
	// (pg_hba.conf is initdb's), so a test can compare both.
	TLS *TLS

	// ListenAddresses is the server's listen_addresses; "127.0.0.1" when
	// empty. A test of what a server reachable from other hosts looks like
	// sets "*" (the cluster still answers on 127.0.0.1, and its pg_hba.conf
	// is initdb's, which admits loopback connections only).
	ListenAddresses string

	// Superuser is the name of the bootstrap superuser; "postgres" when
	// empty.
	Superuser string

	// OSUser is the operating-system account that runs the server when the
	// caller is root. When empty, Start uses "nobody", or creates a system
	// account "pglocal" if there is no "nobody". It is ignored when the
	// caller is not root: the server then runs as the caller.
	OSUser string

	// TempDir is the folder in which the cluster's own temporary folder is
	// made; os.TempDir() when empty. When the server runs as another
	// account and TempDir cannot be traversed by it, Start uses /tmp.
	TempDir string

	// InitdbCache, when set, is a folder where Start keeps a pristine copy
	// of what initdb made, one per PostgreSQL version and initdb options.
	// Later starts copy it instead of running initdb again, which saves
	// about a second per cluster. Empty: run initdb every time.
	InitdbCache string

	// StartTimeout bounds how long Start waits for the new server to accept
	// connections; 60 seconds when zero.
	StartTimeout time.Duration

	// NoSignalHandler, when true, keeps Start from installing its SIGINT and
	// SIGTERM handler. A program that handles those signals itself sets it
	// and calls Stop on its own.
	NoSignalHandler bool

	// Logf, when set, receives one-line progress messages (initdb done,
	// server listening, server stopped). It never receives SQL or secrets.
	Logf func(format string, args ...any)
}

// TLS is a server certificate chain and its private key, both PEM-encoded.
type TLS struct {
	// CertPEM is the server certificate (followed by any intermediates).
	CertPEM []byte
	// KeyPEM is the certificate's private key, unencrypted.
	KeyPEM []byte
}

// Cluster is a running throwaway PostgreSQL server. Its methods are safe for
// concurrent use.
type Cluster struct {
	binDir    string
	rootDir   string
	dataDir   string
	socketDir string
	logPath   string
	superuser string
	port      int
	account   *serverAccount
	args      []string // postgres arguments other than -D and -p
	logf      func(string, ...any)

	reaper      *exec.Cmd
	reaperWrite *os.File // closing it (or the process ending) wakes the reaper

	mu      sync.Mutex
	server  *exec.Cmd
	exited  chan struct{} // closed when server's Wait returns
	stopped bool
	stopErr error
}

// reservedSettings are the settings Start owns.
var reservedSettings = map[string]bool{
	"listen_addresses": true, "port": true, "unix_socket_directories": true,
	"shared_preload_libraries": true, "ssl": true, "ssl_cert_file": true, "ssl_key_file": true,
}

// Start creates and starts a new cluster. It returns once the server accepts
// connections. On any error it removes what it created. The caller must
// call Stop when done (the signal handler and the reaper described in the
// package documentation are safety nets, not the normal path).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	for name := range opts.Settings {
		if reservedSettings[name] {
			return nil, fmt.Errorf("pglocal: setting %q is chosen by Start (use Options.SharedPreloadLibraries for shared_preload_libraries, Options.TLS for ssl, Options.ListenAddresses for listen_addresses)", name)
		}
	}
	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	} else if err := checkBinDir(binDir); err != nil {
		return nil, err
	}
	account, err := chooseAccount(opts.OSUser, logf)
	if err != nil {
		return nil, err
	}
	parent := opts.TempDir
	if parent == "" {
		parent = os.TempDir()
	}
	if account != nil && !traversableByOthers(parent) {
		parent = "/tmp"
	}
	rootDir, err := os.MkdirTemp(parent, "pglocal-")
	if err != nil {
		return nil, fmt.Errorf("pglocal: make temporary folder: %w", err)
	}
	c := &Cluster{
		binDir:    binDir,
		rootDir:   rootDir,
		dataDir:   filepath.Join(rootDir, "data"),
		socketDir: filepath.Join(rootDir, "socket"),
		logPath:   filepath.Join(rootDir, "server.log"),
		superuser: opts.Superuser,
		account:   account,
		logf:      logf,
	}
	if c.superuser == "" {
		c.superuser = "postgres"
	}
	if err := c.create(ctx, opts); err != nil {
		c.cleanup()
		return nil, err
	}
	register(c, !opts.NoSignalHandler)
	return c, nil
}

// create does the work of Start after the folder exists.
func (c *Cluster) create(ctx context.Context, opts Options) error {
	if err := os.Mkdir(c.socketDir, 0o700); err != nil {
		return fmt.Errorf("pglocal: make socket folder: %w", err)
	}
	for _, p := range []string{c.rootDir, c.socketDir} {
		if err := c.account.chown(p); err != nil {
			return err
		}
	}
	if err := c.startReaper(); err != nil {
		return err
	}
	noSync := strings.EqualFold(opts.Settings["fsync"], "off")
	if err := c.initdbCached(ctx, noSync, opts.InitdbCache); err != nil {
		return err
	}
	c.args = serverArgs(c.socketDir, opts)
	if opts.TLS != nil {
		tlsArgs, err := c.writeTLS(opts.TLS)
		if err != nil {
			return err
		}
		c.args = append(c.args, tlsArgs...)
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	// A port that was free a moment ago can be taken by another process
	// before the server binds it; try a few fresh ports before giving up.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		lastErr = c.startServer(ctx, port, timeout)
		if lastErr == nil {
			c.logf("pglocal: PostgreSQL listening on 127.0.0.1:%d (folder %s)", port, c.rootDir)
			return nil
		}
		if !errors.Is(lastErr, errPortTaken) {
			return lastErr
		}
	}
	return lastErr
}

// writeTLS writes the certificate and key into the cluster's folder, owned
// by the server's account (PostgreSQL refuses a key others can read), and
// returns the settings that turn TLS on with them.
func (c *Cluster) writeTLS(t *TLS) ([]string, error) {
	if len(t.CertPEM) == 0 || len(t.KeyPEM) == 0 {
		return nil, errors.New("pglocal: Options.TLS needs both CertPEM and KeyPEM")
	}
	certPath, keyPath := filepath.Join(c.rootDir, "server.crt"), filepath.Join(c.rootDir, "server.key")
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{certPath, t.CertPEM, 0o644}, {keyPath, t.KeyPEM, 0o600}} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return nil, fmt.Errorf("pglocal: write %s: %w", filepath.Base(f.path), err)
		}
		if err := c.account.chown(f.path); err != nil {
			return nil, err
		}
	}
	return []string{"-c", "ssl=on", "-c", "ssl_cert_file=" + certPath, "-c", "ssl_key_file=" + keyPath}, nil
}

// serverArgs builds the postgres arguments other than -D and -p.
func serverArgs(socketDir string, opts Options) []string {
	listen := opts.ListenAddresses
	if listen == "" {
		listen = "127.0.0.1"
	}
	args := []string{
		"-c", "listen_addresses=" + listen,
		"-c", "unix_socket_directories=" + socketDir,
	}
	if len(opts.SharedPreloadLibraries) > 0 {
		args = append(args, "-c", "shared_preload_libraries="+strings.Join(opts.SharedPreloadLibraries, ","))
	}
	names := make([]string, 0, len(opts.Settings))
	for name := range opts.Settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		args = append(args, "-c", name+"="+opts.Settings[name])
	}
	return args
}

// initdb creates the data directory.
func (c *Cluster) initdb(ctx context.Context, noSync bool) error {
	began := time.Now()
	args := []string{
		"-D", c.dataDir,
		"-U", c.superuser,
		"--auth=trust",
		"--encoding=UTF8",
		"--locale=C",
	}
	if noSync {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "initdb"), args...)
	cmd.Dir = c.rootDir
	cmd.Env = c.childEnv()
	cmd.SysProcAttr = c.account.sysProcAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pglocal: initdb failed: %v\n%s", err, tail(out, 20))
	}
	c.logf("pglocal: initdb done in %s", time.Since(began).Round(time.Millisecond))
	return nil
}

// childEnv is the environment of initdb and postgres: the caller's, with
// HOME pointed at the cluster folder (the server account may have none)
// and LC_ALL fixed so messages do not depend on the caller's locale.
func (c *Cluster) childEnv() []string {
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "LC_ALL=") || strings.HasPrefix(kv, "PGDATA=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+c.rootDir, "LC_ALL=C")
}

// errPortTaken marks a start that failed only because the port was in use.
var errPortTaken = errors.New("pglocal: port already in use")

// startServer starts postgres on port and waits until it accepts
// connections.
func (c *Cluster) startServer(ctx context.Context, port int, timeout time.Duration) error {
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pglocal: open server log: %w", err)
	}
	defer logFile.Close() // the child keeps its own copy of the descriptor
	logStart, _ := logFile.Seek(0, 2)

	args := append([]string{"-D", c.dataDir, "-p", strconv.Itoa(port)}, c.args...)
	cmd := exec.Command(filepath.Join(c.binDir, "postgres"), args...)
	cmd.Dir = c.rootDir
	cmd.Env = c.childEnv()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = c.account.sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pglocal: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c.mu.Lock()
	c.server, c.exited, c.port = cmd, exited, port
	c.mu.Unlock()

	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-exited:
			logText := c.logSince(logStart)
			if strings.Contains(logText, "Address already in use") || strings.Contains(logText, "could not bind") {
				return errPortTaken
			}
			return fmt.Errorf("pglocal: postgres exited during start-up:\n%s", tail([]byte(logText), 20))
		case <-ctx.Done():
			c.stopServer()
			return fmt.Errorf("pglocal: waiting for postgres to start: %w", ctx.Err())
		default:
		}
		if c.ping(ctx) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			c.stopServer()
			return fmt.Errorf("pglocal: postgres did not accept connections within %s:\n%s",
				timeout, tail([]byte(c.logSince(logStart)), 20))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// ping opens and closes one connection to the postgres database.
func (c *Cluster) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// logSince returns the server log from byte offset start on.
func (c *Cluster) logSince(start int64) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil || int64(len(b)) < start {
		return ""
	}
	return string(b[start:])
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pglocal: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL returns a connection URL for the superuser to database dbname over
// TCP on 127.0.0.1, with TLS off (even when Options.TLS turned it on).
func (c *Cluster) URL(dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(c.superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port())),
		Path:     "/" + dbname,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Superuser returns the name of the cluster's bootstrap superuser.
func (c *Cluster) Superuser() string { return c.superuser }

// Host returns the address the server listens on: always 127.0.0.1.
func (c *Cluster) Host() string { return "127.0.0.1" }

// Port returns the TCP port the server listens on.
func (c *Cluster) Port() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.port
}

// SocketDir returns the folder that holds the server's unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// DataDir returns the cluster's data directory.
func (c *Cluster) DataDir() string { return c.dataDir }

// BinDir returns the folder of the PostgreSQL binaries the cluster runs
// (psql and pg_dump are usually next to them).
func (c *Cluster) BinDir() string { return c.binDir }

// LogPath returns the path of the server's log file (useful to print when
// a test fails; it is removed by Stop).
func (c *Cluster) LogPath() string { return c.logPath }

// Restart shuts the server down (fast shutdown) and starts it again on the
// same port with the same data, for tests that need a server restart
// while clients are connected. Every open connection is cut.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("pglocal: cluster already stopped")
	}
	port := c.port
	c.mu.Unlock()
	c.stopServer()
	if err := c.startServer(ctx, port, 60*time.Second); err != nil {
		return fmt.Errorf("pglocal: restart: %w", err)
	}
	c.logf("pglocal: PostgreSQL restarted on 127.0.0.1:%d", port)
	return nil
}

// Stop shuts the server down and removes the cluster's folder. Calling it
// again returns the first call's result.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		err := c.stopErr
		c.mu.Unlock()
		return err
	}
	c.stopped = true
	c.mu.Unlock()
	unregister(c)
	err := c.cleanup()
	c.mu.Lock()
	c.stopErr = err
	c.mu.Unlock()
	c.logf("pglocal: PostgreSQL on port %d stopped and its files removed", c.Port())
	return err
}

// cleanup stops the reaper and the server and removes the folder.
func (c *Cluster) cleanup() error {
	c.stopReaper()
	c.stopServer()
	if err := os.RemoveAll(c.rootDir); err != nil {
		return fmt.Errorf("pglocal: remove %s: %w", c.rootDir, err)
	}
	return nil
}

// stopServer shuts the server down: SIGINT (fast shutdown, as pg_ctl stop
// -m fast), then SIGQUIT (immediate) after 15 s, then SIGKILL after 5 s
// more. It returns when the process has exited.
func (c *Cluster) stopServer() {
	c.mu.Lock()
	cmd, exited := c.server, c.exited
	c.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, 15 * time.Second},
		{syscall.SIGQUIT, 5 * time.Second},
		{syscall.SIGKILL, time.Minute},
	}
	for _, s := range steps {
		select {
		case <-exited:
			return
		default:
		}
		_ = cmd.Process.Signal(s.sig)
		select {
		case <-exited:
			return
		case <-time.After(s.wait):
		}
	}
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
