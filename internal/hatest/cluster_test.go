package hatest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/pglocal"
)

// installHint says how to get what the test needs.
const installHint = "run make deps (as root: apt-get install -y --no-install-recommends patroni etcd-server postgresql-15)"

// deployDir holds the tested configuration templates.
const deployDir = "../../deploy/patroni"

// scope is the Patroni cluster name (and etcd's cluster token).
const scope = "leasefence-ha"

// superuser is the cluster's superuser, made by Patroni's bootstrap.
const superuser = "postgres"

// account is the operating-system account the servers run as: nil when
// the test does not run as root (they run as the caller), else "nobody"
// (PostgreSQL refuses to run as root).
type account struct{ uid, gid uint32 }

func chooseAccount(t *testing.T) *account {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("nobody")
	require.NoError(t, err, "running as root: the servers need the unprivileged account nobody")
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	require.NoError(t, err)
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	require.NoError(t, err)
	return &account{uid: uint32(uid), gid: uint32(gid)}
}

func (a *account) attr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
	}
	return attr
}

func (a *account) chown(t *testing.T, path string) {
	t.Helper()
	if a != nil {
		require.NoError(t, os.Chown(path, int(a.uid), int(a.gid)))
	}
}

// lookTools finds patroni, etcd and the PostgreSQL binaries, failing the
// test with the install advice when one is missing.
func lookTools(t *testing.T) (patroni, etcd, binDir string) {
	t.Helper()
	var err error
	if patroni, err = exec.LookPath("patroni"); err != nil {
		t.Fatalf("patroni is not on PATH: %s", installHint)
	}
	if etcd, err = exec.LookPath("etcd"); err != nil {
		t.Fatalf("etcd is not on PATH: %s", installHint)
	}
	if binDir, err = pglocal.FindBinDir(); err != nil {
		t.Fatalf("%v: %s", err, installHint)
	}
	return patroni, etcd, binDir
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	var ls []net.Listener
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		require.NoError(t, l.Close())
	}
	return ports
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// render fills a template of deployDir into path.
func render(t *testing.T, name, path string, data any, acct *account) {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join(deployDir, name))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, tmpl.Option("missingkey=error").Execute(&out, data))
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
	acct.chown(t, path)
}

// process is one server process the test started, with its log.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// start runs a command as acct in its own process group, its output in a
// log file of dir.
func start(t *testing.T, dir, name string, acct *account, bin string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = acct.attr()
	require.NoError(t, cmd.Start(), "start %s", name)
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p
}

// stop ends the process (SIGTERM, SIGKILL of its group after timeout).
func (p *process) stop(timeout time.Duration) {
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last lines of the process's log.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// member is one Patroni member: its REST API, its PostgreSQL and its
// process.
type member struct {
	name     string
	restPort int
	pgPort   int
	dataDir  string
	proc     *process
}

// cluster is etcd and two Patroni members on loopback.
type cluster struct {
	t        *testing.T
	dir      string
	password string // the superuser's
	etcd     *process
	members  []*member
	http     *http.Client
}

// startCluster starts etcd and two Patroni members from the templates of
// deployDir and waits until one is the primary and the other a streaming
// (with synchronous, a synchronous) replica.
func startCluster(t *testing.T, synchronous bool) *cluster {
	t.Helper()
	began := time.Now()
	patroniBin, etcdBin, binDir := lookTools(t)
	acct := chooseAccount(t)
	dir, err := os.MkdirTemp("", "leasefence-ha-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755)) // the server account passes through
	if acct != nil {
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			info, err := os.Stat(d)
			require.NoError(t, err)
			if info.Mode().Perm()&0o001 == 0 {
				t.Fatalf("the servers run as nobody, who cannot pass through %s: set TMPDIR to a folder others may enter", d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	acct.chown(t, dir)
	c := &cluster{t: t, dir: dir, password: randomHex(t, 16), http: &http.Client{Timeout: 5 * time.Second}}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() || os.Getenv("HATEST_LOGS") != "" {
			for _, p := range c.processes() {
				t.Logf("--- %s log (tail):\n%s", p.name, p.tail(400))
			}
		}
		_ = os.RemoveAll(dir)
	})

	ports := freePorts(t, 6)
	etcdConf := filepath.Join(dir, "etcd.yml")
	render(t, "etcd.yml", etcdConf, map[string]any{
		"Name": "etcd1", "DataDir": filepath.Join(dir, "etcd"), "ClientPort": ports[0], "PeerPort": ports[1], "Scope": scope,
	}, acct)
	c.etcd = start(t, dir, "etcd", acct, etcdBin, "--config-file", etcdConf)
	c.waitFor(30*time.Second, "etcd to be healthy", func() bool {
		var health struct{ Health string }
		return c.getJSON(fmt.Sprintf("http://127.0.0.1:%d/health", ports[0]), &health) == nil && health.Health == "true"
	})

	replPassword := randomHex(t, 16)
	for i := range 2 {
		m := &member{name: fmt.Sprintf("pg%d", i+1), restPort: ports[2+2*i], pgPort: ports[3+2*i]}
		m.dataDir = filepath.Join(dir, m.name)
		conf := filepath.Join(dir, m.name+".yml")
		render(t, "member.yml", conf, map[string]any{
			"Scope": scope, "Name": m.name, "RestPort": m.restPort, "EtcdClientPort": ports[0],
			"SynchronousMode": synchronous, "PgPort": m.pgPort, "DataDir": m.dataDir, "BinDir": binDir,
			"PgpassFile": filepath.Join(dir, m.name+".pgpass"), "SocketDir": dir,
			"Superuser": superuser, "SuperuserPassword": c.password,
			"ReplicationUser": "replicator", "ReplicationPassword": replPassword,
		}, acct)
		c.members = append(c.members, m)
		// The first member bootstraps alone, so which one leads is known
		// and the second clones it.
		m.proc = start(t, dir, m.name, acct, patroniBin, conf)
		if i == 0 {
			c.waitFor(60*time.Second, "the first member to lead", func() bool { return c.role(m) == "primary" })
			t.Logf("cluster: %s leads after %s", m.name, time.Since(began).Round(100*time.Millisecond))
		}
	}
	c.waitReplica(c.members[1], synchronous)
	t.Logf("cluster: etcd and %s leading, %s its %sreplica, in %s", c.members[0].name, c.members[1].name,
		map[bool]string{true: "synchronous ", false: ""}[synchronous], time.Since(began).Round(100*time.Millisecond))
	return c
}

func (c *cluster) processes() []*process {
	ps := []*process{}
	for _, m := range c.members {
		if m.proc != nil {
			ps = append(ps, m.proc)
		}
	}
	if c.etcd != nil {
		ps = append(ps, c.etcd)
	}
	return ps
}

// stop stops the members (each stops its PostgreSQL) and then etcd.
func (c *cluster) stop() {
	for _, m := range c.members {
		if m.proc != nil {
			m.proc.stop(30 * time.Second)
		}
	}
	if c.etcd != nil {
		c.etcd.stop(10 * time.Second)
	}
}

// waitFor polls cond every 100 ms until it holds or d passes.
func (c *cluster) waitFor(d time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *cluster) getJSON(u string, v any) error {
	resp, err := c.http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// memberStatus is what a member's REST API says of itself (GET /patroni).
type memberStatus struct {
	State    string `json:"state"`
	Role     string `json:"role"`
	Timeline int    `json:"timeline"`
}

func (c *cluster) status(m *member) memberStatus {
	var s memberStatus
	_ = c.getJSON(fmt.Sprintf("http://127.0.0.1:%d/patroni", m.restPort), &s)
	return s
}

// role is "primary" for a running leader (Patroni 3.0 says "master"),
// "replica" for a running replica, else "".
func (c *cluster) role(m *member) string {
	s := c.status(m)
	if s.State != "running" {
		return ""
	}
	switch s.Role {
	case "master", "primary":
		return "primary"
	case "replica":
		return "replica"
	}
	return ""
}

// httpStatus is the status code of GET path on m's REST API (0 when it
// does not answer).
func (c *cluster) httpStatus(m *member, path string) int {
	resp, err := c.http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", m.restPort, path))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReplica waits until m streams from the leader (and, when
// synchronous, is its synchronous standby).
func (c *cluster) waitReplica(m *member, synchronous bool) {
	c.t.Helper()
	began := time.Now()
	c.waitFor(60*time.Second, m.name+" to replicate", func() bool { return c.httpStatus(m, "/replica") == 200 })
	c.t.Logf("cluster: %s replicates after %s", m.name, time.Since(began).Round(100*time.Millisecond))
	if synchronous {
		c.waitFor(60*time.Second, m.name+" to be the synchronous standby", func() bool { return c.httpStatus(m, "/sync") == 200 })
	}
}

// leader returns the member that is the running primary and the other.
func (c *cluster) leader() (leader, other *member) {
	c.t.Helper()
	for i, m := range c.members {
		if c.role(m) == "primary" {
			return m, c.members[1-i]
		}
	}
	c.t.Fatal("no member is the primary")
	return nil, nil
}

// switchover asks the leader's REST API for a planned switchover to other
// and waits until other leads.
func (c *cluster) switchover(from, to *member) {
	c.t.Helper()
	body, err := json.Marshal(map[string]string{"leader": from.name, "candidate": to.name})
	require.NoError(c.t, err)
	// Patroni refuses (412, "no good candidates") until its own view of
	// the candidate, refreshed every loop_wait, shows it streaming within
	// maximum_lag_on_failover: just after a replica rejoined it may not.
	var status int
	var text []byte
	c.waitFor(30*time.Second, "Patroni to accept the switchover", func() bool {
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Post(
			fmt.Sprintf("http://127.0.0.1:%d/switchover", from.restPort), "application/json", bytes.NewReader(body))
		require.NoError(c.t, err)
		text, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
		return status != http.StatusPreconditionFailed
	})
	require.Equal(c.t, http.StatusOK, status, "switchover: %s", text)
	c.waitFor(60*time.Second, to.name+" to lead", func() bool { return c.role(to) == "primary" })
}

// killPostmaster sends SIGKILL to m's postmaster (the pid in
// postmaster.pid) and returns when the process is gone.
func (c *cluster) killPostmaster(m *member) {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(m.dataDir, "postmaster.pid"))
	require.NoError(c.t, err)
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	require.NoError(c.t, err)
	require.NoError(c.t, syscall.Kill(pid, syscall.SIGKILL))
	c.waitFor(10*time.Second, "the postmaster to exit", func() bool { return syscall.Kill(pid, 0) != nil })
}

// url returns a superuser URL of dbname on the given members (a multi-host
// URL for more than one), with extra query settings.
func (c *cluster) url(user, password, dbname string, members []*member, query url.Values) string {
	hosts := make([]string, len(members))
	for i, m := range members {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", m.pgPort)
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: strings.Join(hosts, ","),
		Path: "/" + dbname, RawQuery: query.Encode()}
	return u.String()
}
