package pglocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// childModeEnv makes the test binary act as a program that starts a
// cluster and then dies in the way the variable names, so the tests can
// check what is left behind.
const childModeEnv = "PGLOCAL_TEST_CHILD_MODE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		runChild(mode)
		return
	}
	os.Exit(m.Run())
}

// runChild starts a cluster, reports its folder and port on stdout, then
// ends as mode says: "sigterm" signals itself, "panic" panics, "hang" waits
// to be killed.
func runChild(mode string) {
	c, err := Start(context.Background(), Options{Settings: map[string]string{"fsync": "off"}, InitdbCache: testCache()})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(3)
	}
	fmt.Printf("CLUSTER %s %d\n", c.rootDir, c.Port())
	switch mode {
	case "sigterm":
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	case "panic":
		panic("child panics on purpose")
	}
	time.Sleep(time.Minute)
	os.Exit(4)
}

// testCache is the initdb cache the tests share with internal/testdb (the
// cache test itself uses a fresh one), so most tests skip initdb.
func testCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "leasefence", "pglocal-initdb")
}

// startChild runs the test binary in child mode and returns the process,
// the cluster folder and port it reported.
func startChild(t *testing.T, mode string) (*exec.Cmd, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "child printed nothing")
	fields := strings.Fields(line)
	require.Len(t, fields, 3, "child said %q", line)
	require.Equal(t, "CLUSTER", fields[0], "child said %q", line)
	port, err := strconv.Atoi(fields[2])
	require.NoError(t, err)
	go func() { _, _ = bufio.NewReader(stdout).ReadString(0) }()
	return cmd, fields[1], port
}

// requireGone waits until the cluster folder is removed and nothing
// listens on the port.
func requireGone(t *testing.T, root string, port int) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := os.Stat(root)
		if !errors.Is(err, os.ErrNotExist) {
			return false
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return false
		}
		return true
	}, 20*time.Second, 100*time.Millisecond, "cluster folder %s or port %d still there", root, port)
}

func TestStartServesSQLWithSettingsAndStopRemovesEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var progress []string
	c, err := Start(ctx, Options{
		Settings:               map[string]string{"fsync": "off", "max_connections": "42"},
		SharedPreloadLibraries: []string{"auto_explain"},
		Superuser:              "boss",
		InitdbCache:            testCache(),
		Logf:                   func(f string, a ...any) { progress = append(progress, fmt.Sprintf(f, a...)) },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })

	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	settings := map[string]string{}
	for _, name := range []string{"fsync", "max_connections", "shared_preload_libraries", "listen_addresses", "unix_socket_directories"} {
		var v string
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v))
		settings[name] = v
	}
	var user string
	var super bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_user, usesuper FROM pg_user WHERE usename = current_user").Scan(&user, &super))
	require.NoError(t, conn.Close(ctx))

	require.Equal(t, "off", settings["fsync"])
	require.Equal(t, "42", settings["max_connections"])
	require.Equal(t, "auto_explain", settings["shared_preload_libraries"])
	require.Equal(t, "127.0.0.1", settings["listen_addresses"])
	require.Equal(t, c.SocketDir(), settings["unix_socket_directories"])
	require.Equal(t, "boss", user)
	require.Equal(t, "boss", c.Superuser())
	require.True(t, super)
	require.Equal(t, "127.0.0.1", c.Host())
	require.FileExists(t, filepath.Join(c.DataDir(), "PG_VERSION"))
	require.FileExists(t, c.LogPath())
	require.FileExists(t, filepath.Join(c.BinDir(), "postgres"))

	// The server never runs as root.
	pidText, err := os.ReadFile(filepath.Join(c.DataDir(), "postmaster.pid"))
	require.NoError(t, err)
	pid := strings.SplitN(string(pidText), "\n", 2)[0]
	status, err := os.ReadFile("/proc/" + pid + "/status")
	require.NoError(t, err)
	uid := ""
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") {
			uid = strings.Fields(line)[1]
		}
	}
	require.NotEqual(t, "0", uid, "postgres runs as root")
	require.Equal(t, strconv.Itoa(os.Geteuid()) == "0", uid != strconv.Itoa(os.Geteuid()),
		"postgres runs as another account exactly when the caller is root")

	root, port := c.rootDir, c.Port()
	require.NoError(t, c.Stop())
	require.NoError(t, c.Stop(), "a second Stop returns the first one's result")
	requireGone(t, root, port)
	require.NotEmpty(t, progress, "Logf received progress")
	for _, p := range progress {
		require.True(t, strings.HasPrefix(p, "pglocal: "), "progress line %q", p)
	}
}

func TestRestartKeepsDataAndPort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := Start(ctx, Options{Settings: map[string]string{"fsync": "off"}, InitdbCache: testCache()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE kept_across_restart (kept_value int); INSERT INTO kept_across_restart VALUES (7)")
	require.NoError(t, err)
	port := c.Port()

	require.NoError(t, c.Restart(ctx))
	_, err = conn.Exec(ctx, "SELECT 1")
	require.Error(t, err, "a connection from before the restart is cut")
	conn.Close(ctx)

	require.Equal(t, port, c.Port())
	conn, err = pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v int
	require.NoError(t, conn.QueryRow(ctx, "SELECT kept_value FROM kept_across_restart").Scan(&v))
	require.Equal(t, 7, v)

	require.NoError(t, c.Stop())
	require.Error(t, c.Restart(ctx), "a stopped cluster cannot restart")
}

func TestKilledCallerLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	cmd, root, port := startChild(t, "hang")
	require.DirExists(t, root)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	requireGone(t, root, port)
}

func TestPanickingCallerLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	cmd, root, port := startChild(t, "panic")
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode(), "a Go panic exits with status 2")
	requireGone(t, root, port)
}

func TestSIGTERMStopsClusterAndExits143(t *testing.T) {
	t.Parallel()
	cmd, root, port := startChild(t, "sigterm")
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 128+int(syscall.SIGTERM), exit.ExitCode())
	requireGone(t, root, port)
}

func TestStartRejectsReservedSettingsAndBadBinDir(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Options{Settings: map[string]string{"port": "5432"}})
	require.ErrorContains(t, err, `setting "port" is chosen by Start`)

	empty := t.TempDir()
	_, err = Start(context.Background(), Options{BinDir: empty})
	require.ErrorContains(t, err, empty+" does not hold the PostgreSQL server binaries")
}

func TestStartReportsServerThatCannotStart(t *testing.T) {
	t.Parallel()
	parent, err := os.MkdirTemp("", "pglocal-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755)) // reachable by the server account
	_, err = Start(context.Background(), Options{
		TempDir:     parent,
		InitdbCache: testCache(),
		Settings:    map[string]string{"fsync": "off", "no_such_setting_here": "1"},
	})
	require.ErrorContains(t, err, "postgres exited during start-up")
	require.ErrorContains(t, err, "no_such_setting_here", "the error carries the server's own complaint")
	left, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Empty(t, left, "a failed Start removes its folder")
}

func TestFindBinDirPicksNewestDebianVersion(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "16", "notaversion"} {
		dir := filepath.Join(root, v, "bin")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, name := range []string{"initdb", "postgres"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
		}
	}
	// 17 has no postgres binary, so it does not count.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "17", "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "17", "bin", "initdb"), []byte("#!/bin/sh\n"), 0o755))
	require.Equal(t, filepath.Join(root, "16", "bin"), newestDebianBinDir(root))
	require.Equal(t, "", newestDebianBinDir(filepath.Join(root, "missing")))

	// With nothing on PATH and no Debian folder, FindBinDir names the fix.
	oldRoot := debianRoot
	debianRoot = filepath.Join(root, "missing")
	t.Cleanup(func() { debianRoot = oldRoot })
	t.Setenv("PATH", t.TempDir())
	_, err := FindBinDir()
	require.ErrorIs(t, err, ErrNoBinaries)
	require.ErrorContains(t, err, "make deps")

	debianRoot = root
	dir, err := FindBinDir()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "16", "bin"), dir)
}

func TestFindBinDirOnThisMachine(t *testing.T) {
	t.Parallel()
	dir, err := FindBinDir()
	require.NoError(t, err, "install the server with: make deps")
	require.True(t, hasServerBinaries(dir))
}

func TestInitdbCacheIsFilledThenReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cache := t.TempDir()
	start := func() []string {
		var progress []string
		var mu sync.Mutex
		c, err := Start(ctx, Options{
			Settings:    map[string]string{"fsync": "off"},
			InitdbCache: cache,
			Logf: func(f string, a ...any) {
				mu.Lock()
				progress = append(progress, fmt.Sprintf(f, a...))
				mu.Unlock()
			},
		})
		require.NoError(t, err)
		defer c.Stop()
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		require.NoError(t, err)
		var one int
		require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
		require.NoError(t, conn.Close(ctx))
		return progress
	}
	first := strings.Join(start(), "\n")
	require.Contains(t, first, "initdb done")
	require.Contains(t, first, "stored in the cache")
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one cache entry, no leftover staging folder")

	second := strings.Join(start(), "\n")
	require.Contains(t, second, "copied from the initdb cache")
	require.NotContains(t, second, "initdb done")
}
