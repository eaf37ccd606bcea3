// Command leasectl operates a leasefence database: it applies and reverts
// the migration bundle, shows and sets lease policies, audits the live
// database against the contract, shows lease health, and writes the
// control-evidence report auditors ask for.
//
// # Overview
//
//	leasectl migrate up|down|status   apply, revert or inspect the bundle
//	leasectl policy show|set          read or change a queue's lease policy
//	leasectl change-control show|set  ticket pattern and approval rules of change records
//	leasectl audit                    check roles, privileges and guards
//	leasectl health                   lease health per queue
//	leasectl evidence                 control-evidence report (Markdown or JSON)
//	leasectl deployment record        record a deployed application version
//	leasectl demo                     run the lease demo
//
// Every command connects with --database-url, or, when it is empty, with
// the standard PostgreSQL variables (PGHOST, PGPORT, PGDATABASE, PGUSER,
// PGPASSWORD, PGSSLMODE, ...). Commands that print data take
// --output text|json. Flags and positional arguments may come in any
// order after the command and its action ("jobs show 201 --output json"
// or "jobs show --output json 201"); "--" ends the flags; --help or -h on
// any command or action prints its usage and exits 0.
//
// # Exit codes
//
//	0   success
//	1   error (the message on stderr says what failed, with PostgreSQL's
//	    DETAIL and HINT lines when there are any)
//	2   audit findings
//	64  usage error (unknown command, bad flag or value)
//
// # What it never prints
//
// leasectl reads only payload-blind functions and the system catalogs: it
// never prints a job payload, claim token, worker owner id, idempotency key
// or job id. Operator reasons and database role names are shown, because
// they are the evidence.
package main
