// Package hatest holds the high-availability test of leasefence (issue
// 36): etcd and two Patroni members on loopback, configured from the
// templates in deploy/patroni, the bundle installed on the leader, a
// goclient worker on a multi-host URL with target_session_attrs=read-write
// through one planned switchover and one crash failover (kill -9 of the
// leader's postmaster). It needs patroni and etcd-server (make deps) and
// fails, never skips, when they are missing.
//
// Run as root, the servers run as the account nobody, in a folder under
// TMPDIR. The member and etcd logs are printed when the test fails, or
// always when HATEST_LOGS is set to any value. Its log lines report what was
// measured: how long each promotion took, how long the new primary had no
// synchronous standby and how many jobs completed meanwhile, and how many
// attempts each event charged, which must be none (issue 36, item 1), and
// the lease health's failover reclaims.
//
// The checks live in runScenario, which the make test run calls with one
// switchover and one crash failover in synchronous mode, and make ha-soak
// (TestHASoak, build tag hasoak) with many of each in both synchronous and
// asynchronous mode, on a fresh cluster per mode.
//
// The package has no non-test code; this file only documents it.
package hatest
