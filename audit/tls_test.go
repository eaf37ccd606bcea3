package audit

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
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestLoopbackClassificationOfListenAddressesAndHBARules(t *testing.T) {
	t.Parallel()
	require.Empty(t, addressesBeyondLoopback(""), "sockets only")
	require.Empty(t, addressesBeyondLoopback("localhost, 127.0.0.1,::1, 127.1.2.3"))
	require.Equal(t, []string{"*"}, addressesBeyondLoopback("*"))
	require.Equal(t, []string{"0.0.0.0", "db.internal", "10.0.0.5"}, addressesBeyondLoopback("localhost,0.0.0.0, db.internal,10.0.0.5"))

	for _, tc := range []struct {
		address, mask string
		beyond        bool
	}{
		{"127.0.0.1", "255.255.255.255", false},
		{"127.0.0.0", "255.0.0.0", false},
		{"127.0.0.0", "254.0.0.0", true}, // 126.0.0.0/7 reaches beyond 127/8
		{"::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
		{"::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0", true},
		{"::", "::", true},
		{"0.0.0.0", "0.0.0.0", true},
		{"10.1.2.3", "255.255.255.255", true},
		{"samehost", "", false},
		{"localhost", "", false},
		{"all", "", true},
		{"samenet", "", true},
		{"db-client.internal", "", true},
	} {
		require.Equal(t, tc.beyond, hbaBeyondLoopback(tc.address, tc.mask), "%s/%s", tc.address, tc.mask)
	}
}

// selfSigned is a throwaway server certificate for 127.0.0.1.
func selfSigned(t *testing.T) *pglocal.TLS {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "leasefence audit test"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return &pglocal.TLS{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
}

// nonLoopbackIPv4 is an IPv4 address of this machine beyond loopback, for
// a connection whose client address is not loopback.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no IPv4 address beyond loopback, which the test connects from")
	return ""
}

// addHBA puts lines at the top of the cluster's pg_hba.conf and reloads it.
func addHBA(t *testing.T, c *pglocal.Cluster, db *testdb.DB, lines ...string) {
	t.Helper()
	path := filepath.Join(c.DataDir(), "pg_hba.conf")
	old, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append([]byte(strings.Join(lines, "\n")+"\n"), old...), 0o600))
	execSQL(t, db.Pool(t), `SELECT pg_reload_conf()`)
}

// tlsFindings audits over conn and returns the findings and warnings of
// AUDIT-TLS-CONFIGURATION and AUDIT-UNENCRYPTED-SESSIONS.
func tlsFindings(t *testing.T, conn DB) (tls, tlsWarnings, sessions []string) {
	t.Helper()
	report, err := Run(context.Background(), conn)
	require.NoError(t, err)
	c := resultOf(t, report, controls.CheckTLSConfiguration)
	return c.Findings, c.Warnings, resultOf(t, report, controls.CheckUnencryptedSessions).Findings
}

// Issue 39, item 6: a server that listens beyond loopback with ssl off, a
// pg_hba rule that admits a runtime login over TCP without TLS from beyond
// loopback, and the audit's own plaintext session from beyond loopback are
// findings; the loopback-only test server audits clean, and a login that
// cannot read pg_hba_file_rules is warned that they were not checked.
func TestTLSChecksFindPlaintextPathsFromBeyondLoopback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("loopback only", func(t *testing.T) {
		t.Parallel()
		_, db := testdb.OwnCluster(t)
		tls, warnings, sessions := tlsFindings(t, db.Conn(t))
		require.Empty(t, tls)
		require.Empty(t, warnings)
		require.Empty(t, sessions)
		// An auditor login cannot read the rules: a warning, no finding.
		tls, warnings, _ = tlsFindings(t, db.LoginConn(t, "durable_job_auditor"))
		require.Empty(t, tls)
		require.Equal(t, []string{"this login cannot read pg_hba_file_rules, so the pg_hba rules were not checked: run the audit as a superuser, " +
			"or GRANT SELECT ON pg_catalog.pg_hba_file_rules and EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() to the auditing login"}, warnings)
	})
	t.Run("listening beyond loopback without TLS", func(t *testing.T) {
		t.Parallel()
		cluster, db := testdb.OwnClusterWith(t, testdb.ClusterExtras{ListenAddresses: "*"})
		worker := loginName(t, db.LoginURL(t, "durable_job_worker"))
		execSQL(t, db.Pool(t), `CREATE ROLE tls_group NOLOGIN`)
		execSQL(t, db.Pool(t), `GRANT tls_group TO `+worker)
		addHBA(t, cluster, db,
			"host all all 127.0.0.1/32 trust",         // loopback: fine
			"hostssl all all 0.0.0.0/0 scram-sha-256", // TLS only: fine
			"host all all 203.0.113.0/24 reject",      // refuses: fine
			"host other_db all 0.0.0.0/0 md5",         // another database: fine
			"host replication all 0.0.0.0/0 md5",      // replication only: fine
			"host all someone_else 10.0.0.0/8 md5",    // no runtime login: fine
			"host all "+worker+" 192.0.2.0/24 md5",    // line 7: the worker login
			"hostnossl all +tls_group samenet md5",    // line 8: a group the worker holds
			"host "+db.Name+" all 0.0.0.0/0 trust")    // line 9: everyone, this database
		admin := db.Conn(t)
		tls, _, sessions := tlsFindings(t, admin)
		require.Equal(t, []string{
			"ssl is off while the server listens beyond loopback (listen_addresses *): every TCP connection from another host, " +
				"its password and every value it sends or reads, crosses the network in plain text",
			"pg_hba.conf line 7 (host all " + worker + " 192.0.2.0/24 md5) lets a login of a runtime role connect over TCP without TLS from beyond loopback: use hostssl (and hostnossl ... reject before it)",
			"pg_hba.conf line 8 (hostnossl all +tls_group samenet md5) lets a login of a runtime role connect over TCP without TLS from beyond loopback: use hostssl (and hostnossl ... reject before it)",
			"pg_hba.conf line 9 (host " + db.Name + " all 0.0.0.0/0 trust) lets a login of a runtime role connect over TCP without TLS from beyond loopback: use hostssl (and hostnossl ... reject before it)",
		}, tls)
		require.Empty(t, sessions, "the audit's own session is over loopback")

		// The audit's own session from this machine's other address, in
		// plain text (line 9 admits it).
		u, err := url.Parse(db.URL)
		require.NoError(t, err)
		ip := nonLoopbackIPv4(t)
		u.Host = net.JoinHostPort(ip, strconv.Itoa(cluster.Port()))
		remote, err := pgx.Connect(ctx, u.String())
		require.NoError(t, err)
		defer remote.Close(ctx)
		_, _, sessions = tlsFindings(t, remote)
		require.Equal(t, []string{"this audit's own session (login " + cluster.Superuser() + ") is a TCP connection from " + ip +
			" without TLS: its password and everything it reads cross the network in plain text (connect with sslmode=verify-full)"}, sessions)

		// An auditor login granted the rules sees them too.
		auditor := db.LoginURL(t, "durable_job_auditor")
		execSQL(t, db.Pool(t), `GRANT SELECT ON pg_catalog.pg_hba_file_rules TO `+loginName(t, auditor))
		execSQL(t, db.Pool(t), `GRANT EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() TO `+loginName(t, auditor))
		conn, err := pgx.Connect(ctx, auditor)
		require.NoError(t, err)
		defer conn.Close(ctx)
		tls, warnings, _ := tlsFindings(t, conn)
		require.Len(t, tls, 4)
		require.Empty(t, warnings)
	})
	t.Run("listening beyond loopback with TLS", func(t *testing.T) {
		t.Parallel()
		cluster, db := testdb.OwnClusterWith(t, testdb.ClusterExtras{ListenAddresses: "*", TLS: selfSigned(t)})
		addHBA(t, cluster, db, "hostssl all all 0.0.0.0/0 trust")
		u, err := url.Parse(db.URL)
		require.NoError(t, err)
		u.Host = net.JoinHostPort(nonLoopbackIPv4(t), strconv.Itoa(cluster.Port()))
		q := u.Query()
		q.Set("sslmode", "require")
		u.RawQuery = q.Encode()
		remote, err := pgx.Connect(ctx, u.String())
		require.NoError(t, err)
		defer remote.Close(ctx)
		tls, _, sessions := tlsFindings(t, remote)
		require.Empty(t, tls)
		require.Empty(t, sessions, "a TLS session from beyond loopback is no finding")
	})
}
