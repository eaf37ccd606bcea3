// Command worker is the campaign's worker process: a real OS process that
// runs goclient (Claim, Keep with the heartbeat, and a terminal write in
// one transaction with its target row) against the campaign database
// through the fault proxy, and records every claim, renewal (through a
// recording renewal port around leaseport.NewPg) and terminal
// call with its answer in its own history file. The campaign driver starts
// it, pauses it with SIGSTOP, kills it with SIGKILL and ends it with
// SIGTERM. It never prints a token, payload or SQL error text.
package main
