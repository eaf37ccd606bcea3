package main

import (
	"flag"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// changeRecordFlags are --ticket and --approver, which every command that
// records a change takes (issue 39): the change ticket, checked against the
// change control's ticket pattern, and the login that approved the change,
// which must hold durable_job_operator and, by default, be another login
// than the one making the change.
type changeRecordFlags struct {
	ticket   *string
	approver *string
}

// addChangeRecordFlags adds --ticket and --approver to fs.
func addChangeRecordFlags(fs *flag.FlagSet) changeRecordFlags {
	return changeRecordFlags{
		ticket:   fs.String("ticket", "", "change ticket of this change, checked against the change control's pattern"),
		approver: fs.String("approver", "", "operator login that approved this change (required where change control asks for one)"),
	}
}

// args are the ticket and the approver as SQL arguments: NULL when not given.
func (c changeRecordFlags) args() (ticket, approver any) {
	return nullIfEmpty(*c.ticket), nullIfEmpty(*c.approver)
}

// nullIfEmpty is s, or NULL (nil) when s is empty.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// personalReasonProblem says why a reason that looks like personal data or
// a secret is refused.
const personalReasonProblem = sqlbundle.ReasonLooksPersonal

// looksPersonalOrSecret is the database's looks_personal_or_secret rule,
// checked before a command connects.
var looksPersonalOrSecret = sqlbundle.LooksPersonalOrSecret
