// Command leasectl operates a leasefence database: it applies and reverts
// the migration bundle, shows and sets lease and retention policies, acts
// on single jobs, audits the live database against the contract, shows
// lease health, and writes the control-evidence report auditors ask for.
//
// # Overview
//
//	leasectl migrate up|down|status          apply, revert or inspect the bundle
//	leasectl policy show|set                 read or change a queue's lease policy
//	leasectl retention show|set|apply        retention of finished jobs' data
//	leasectl change-control show|set         ticket pattern and approval rules of change records
//	leasectl changes list|approve|reject     proposed changes (maker-checker)
//	leasectl jobs list|show|cancel|replay    single jobs, payload-blind
//	leasectl erase                           erase one finished job's payload
//	leasectl audit                           check roles, privileges and guards
//	leasectl access                          which logins hold which leasefence roles
//	leasectl health                          lease health per queue
//	leasectl evidence                        control-evidence report (Markdown or JSON)
//	leasectl deployment record               record a deployed application version
//	leasectl demo                            run the lease demo
//
// This package is the process: it hands the arguments, the standard
// streams and a context that SIGINT, SIGTERM and SIGHUP cancel to
// internal/cli, which holds the commands, and exits with the code it
// returns.
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
// never prints a job payload, claim token, worker owner id or idempotency
// key. Job ids are shown only where an operator acts on single jobs (the
// jobs and erase commands); operator reasons and database role names are shown,
// because they are the evidence.
package main
