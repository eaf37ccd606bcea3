// Package transport holds the tests of what leasefence's traffic leaves
// behind outside the database's tables, and of the server-side extensions
// an operator runs next to it: the server log (bind parameters of
// goclient's calls under each log setting), the wire (TLS end to end with
// verify-full), the pgaudit audit log under the runbook's configuration,
// and the retention purge scheduled in pg_cron. It has no code of its own;
// its tests run on clusters of their own from internal/testdb (one per
// test, started with the settings, libraries or certificate under test).
package transport
