// Package leaseport lets the module's tests, benchmarks, demo and fault
// campaign wrap or replace the port through which a goclient.Client's
// heartbeat renews claims. The port is a test seam, so goclient does not
// export it; this internal package is the one way to set it.
package leaseport
