// Package transport holds the tests of what leasefence's traffic leaves
// behind outside the database's tables: the server log (bind parameters of
// goclient's calls under each log setting) and the wire (TLS end to end).
// It has no code of its own; its tests run on clusters of their own from
// internal/testdb, restarted with the settings under test.
package transport
