// Package leaseport lets the module's tests, benchmarks, demo and fault
// campaign wrap or replace the port through which a goclient.Client's
// heartbeat renews claims, and skew the wall clock it reads for its clock
// offset signal. Both are test seams, so goclient does not export them;
// this internal package is the one way to set them.
package leaseport
