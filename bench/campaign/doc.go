// Package campaign is leasefence's fault-injection campaign: real worker
// processes running goclient against a real PostgreSQL 15 cluster with the
// bundle applied from the checkout (sqlbundle.Apply), while injectors cut,
// black-hole, delay and drop replies on a TCP proxy between them
// (faultproxy), pause workers with SIGSTOP past their lease and kill them
// with SIGKILL, terminate their backends, stop PostgreSQL with an immediate
// shutdown and restart it, skew the workers' application clocks, hold job
// rows locked from another session, and replay stale or forged claims
// (the zombie).
//
// Every claim, renewal and terminal call is recorded in a history (one
// JSON line per event, written unbuffered so that a SIGKILL loses nothing
// already done; a call with no recorded answer is "unknown"). At the end,
// Check verifies the history and the database together: fencing
// generations are never issued twice, no stale or expired claim's terminal
// write is accepted, no terminal state is left, every job is in exactly
// one state and none is lost, claims of one job never overlap in database
// time, a live claim is never answered stale (false expiry), a failed or
// lost renewal is never counted as a success, and neither claims nor batch
// renewals wait on a row another session holds locked. A violation is
// printed with the events of the offending job only and the seed of the
// run.
//
// Run drives one campaign; the bounded test in this package and the soak
// program (make soak) call it. The worker process is the main package in
// ./worker.
package campaign
