// Package hatest holds the high-availability test of leasefence (issue
// 36): etcd and two Patroni members on loopback, configured from the
// templates in deploy/patroni, the bundle installed on the leader, a
// goclient worker on a multi-host URL with target_session_attrs=read-write
// through one planned switchover and one crash failover (kill -9 of the
// leader's postmaster). It needs patroni and etcd-server (make deps) and
// fails, never skips, when they are missing.
//
// The package has no non-test code; this file only documents it.
package hatest
