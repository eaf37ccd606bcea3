package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// testCA is a certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// newCA makes a self-signed CA certificate valid for an hour.
func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serverCert issues a server certificate for the IP addresses given and
// the host name db.leasefence.test, signed by ca.
func (ca *testCA) serverCert(t *testing.T, ips ...net.IP) *pglocal.TLS {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "leasefence test server"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  ips,
		DNSNames:     []string{"db.leasefence.test"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return &pglocal.TLS{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// writeFile writes data into dir/name and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// withTLS returns the URL u with sslmode=verify-full, sslrootcert=rootCert
// and, when host is not empty, that host name instead of u's.
func withTLS(t *testing.T, u, rootCert, host string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	q := parsed.Query()
	q.Set("sslmode", "verify-full")
	q.Set("sslrootcert", rootCert)
	parsed.RawQuery = q.Encode()
	if host != "" {
		parsed.Host = net.JoinHostPort(host, parsed.Port())
	}
	return parsed.String()
}

// buildLeasectl builds the leasectl binary into a temporary folder.
func buildLeasectl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "leasectl")
	out, err := osexec.Command("go", "build", "-o", bin, "github.com/mightyetl/leasefence/cmd/leasectl").CombinedOutput()
	require.NoError(t, err, "go build leasectl: %s", out)
	return bin
}

// runLeasectl runs the binary with args and returns its exit code and its
// output (stdout and stderr together).
func runLeasectl(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PGSSLMODE=", "PGSSLROOTCERT=", "PGSERVICE=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exitErr *osexec.ExitError
		require.ErrorAs(t, err, &exitErr, "leasectl %v: %s", args, out)
		return exitErr.ExitCode(), string(out)
	}
	return 0, string(out)
}

// The goclient worker (its claiming pool and its heartbeat's pool) and
// leasectl connect to a server whose certificate was made in the test, with
// sslmode=verify-full and sslrootcert. The server itself reports the
// worker's sessions encrypted in pg_stat_ssl, and its connection log
// reports leasectl's session encrypted. A client given another CA, or a
// host name the certificate does not name, fails to connect with a
// certificate error (leasectl: one line, exit 1) and claims nothing: the
// job it could have claimed stays queued.
func TestWorkerAndLeasectlConnectOverVerifiedTLSAndRefuseAWrongCAOrHost(t *testing.T) {
	t.Parallel()
	ca, otherCA := newCA(t, "leasefence test CA"), newCA(t, "some other CA")
	cluster, db := testdb.OwnClusterWith(t, testdb.ClusterExtras{
		TLS:      ca.serverCert(t, net.ParseIP("127.0.0.1")),
		Settings: map[string]string{"log_connections": "on"},
	})
	dir := t.TempDir()
	rootCert := writeFile(t, dir, "ca.pem", ca.pem)
	wrongRoot := writeFile(t, dir, "other-ca.pem", otherCA.pem)
	leasectl := buildLeasectl(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy('tls', '4 seconds', '1 second', '1 hour', true, 'tls test')`)
	require.NoError(t, err)

	producerURL := withTLS(t, db.LoginURL(t, "durable_job_producer"), rootCert, "")
	workerURL := withTLS(t, db.LoginURL(t, "durable_job_worker"), rootCert, "")
	newClient := func(u string) *goclient.Client {
		cfg, err := goclient.ParsePoolConfig(u, 0)
		require.NoError(t, err)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		c, err := goclient.NewClient(pool, goclient.Config{OwnerID: "tls-worker",
			LeaseDuration: 4 * time.Second, RenewalInterval: time.Second, SafetyMargin: 500 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	producer := newClient(producerURL)
	jobID, err := producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "tls", Payload: []byte(`{"n": 1}`)})
	require.NoError(t, err)

	// The worker runs the job; while its handler runs, the server is asked
	// about every session of the worker's login.
	worker := newClient(workerURL)
	workerLogin := loginOf(t, workerURL)
	type session struct {
		SSL     bool
		Version string
	}
	seen := make(chan []session, 1)
	w, err := worker.NewWorker(goclient.WorkerConfig{Queue: "tls", PollInterval: 50 * time.Millisecond,
		Handler: func(ctx context.Context, job goclient.Job) error {
			// The heartbeat renews over a pool of its own; wait until its
			// session is there too (the first renewal, a second in).
			var sessions []session
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				rows, err := admin.Query(ctx, `SELECT s.ssl, coalesce(s.version, '')
					FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.usename = $1`, workerLogin)
				if err != nil {
					return err
				}
				sessions = sessions[:0]
				for rows.Next() {
					var s session
					if err := rows.Scan(&s.SSL, &s.Version); err != nil {
						return err
					}
					sessions = append(sessions, s)
				}
				if rows.Err() != nil {
					return rows.Err()
				}
				if len(sessions) >= 2 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			seen <- sessions
			return nil
		}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	var sessions []session
	select {
	case sessions = <-seen:
	case <-ctx.Done():
		t.Fatal("the worker never ran the job")
	}
	require.Eventually(t, func() bool {
		var status string
		_ = admin.QueryRow(ctx, `SELECT job_status FROM durable_jobs.job_record WHERE job_record_id = $1`, jobID).Scan(&status)
		return status == "SUCCEEDED"
	}, 20*time.Second, 50*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, len(sessions), 2, "the worker's claiming and renewing sessions in pg_stat_activity: %+v", sessions)
	for _, s := range sessions {
		require.True(t, s.SSL, "a worker session without TLS: %+v", sessions)
		require.True(t, strings.HasPrefix(s.Version, "TLSv1."), "%+v", sessions)
	}
	t.Logf("worker sessions seen by the server: %+v", sessions)

	// leasectl over verify-full: the server's connection log says its
	// session was encrypted.
	operatorURL := db.LoginURL(t, "durable_job_operator")
	operatorLogin := loginOf(t, operatorURL)
	code, out := runLeasectl(t, leasectl, "policy", "show", "--database-url", withTLS(t, operatorURL, rootCert, ""))
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "tls")
	logText, err := os.ReadFile(cluster.LogPath())
	require.NoError(t, err)
	authorized := regexp.MustCompile(`connection authorized: user=`+operatorLogin+` .*`).FindAllString(string(logText), -1)
	require.NotEmpty(t, authorized, "no connection of leasectl's login in the server log")
	for _, line := range authorized {
		require.Contains(t, line, "SSL enabled (protocol=TLSv1.", line)
	}

	// Refusals: another CA, and a host name the certificate does not name
	// (it names 127.0.0.1 and db.leasefence.test; localhost reaches the same
	// server).
	queued, err := producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "tls", Payload: []byte(`{"n": 2}`)})
	require.NoError(t, err)
	plainWorkerURL := db.LoginURL(t, "durable_job_worker")
	refusals := []struct {
		name, root, host, want string
	}{
		{"wrong CA", wrongRoot, "", "certificate signed by unknown authority"},
		{"wrong host name", rootCert, "localhost", "certificate is valid for db.leasefence.test, not localhost"},
	}
	for _, r := range refusals {
		cfg, err := goclient.ParsePoolConfig(withTLS(t, plainWorkerURL, r.root, r.host), 0)
		require.NoError(t, err)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		c, err := goclient.NewClient(pool, goclient.Config{OwnerID: "tls-refused"})
		require.NoError(t, err)
		_, err = c.Claim(ctx, "tls")
		require.ErrorContains(t, err, r.want, r.name)
		require.NoError(t, c.Close())
		pool.Close()

		code, out := runLeasectl(t, leasectl, "jobs", "list", "--queue", "tls", "--database-url",
			withTLS(t, operatorURL, r.root, r.host))
		require.Equal(t, 1, code, "%s: %s", r.name, out)
		require.Contains(t, out, r.want, r.name)
		require.Equal(t, 1, strings.Count(strings.TrimRight(out, "\n"), "\n")+1, "%s: one line: %s", r.name, out)
		t.Logf("%s: leasectl says %q", r.name, strings.TrimSpace(out))
	}
	var status string
	var attempts int
	require.NoError(t, admin.QueryRow(ctx, `SELECT job_status, attempt_number FROM durable_jobs.job_record WHERE job_record_id = $1`,
		queued).Scan(&status, &attempts))
	require.Equal(t, "QUEUED", status)
	require.Zero(t, attempts)
}
