// Package faultproxy is a TCP proxy for fault-injection tests: it sits
// between PostgreSQL clients and a server on 127.0.0.1 and, on command, cuts
// every connection, black-holes traffic, delays it, or drops the server's
// replies while still forwarding the client's requests (so the server can
// commit a transaction whose answer never arrives: the lost reply after a
// commit, the case a fenced client must never count as a success).
//
// It carries bytes, never parses or logs them, so no SQL, token or payload
// passes through its output.
package faultproxy
