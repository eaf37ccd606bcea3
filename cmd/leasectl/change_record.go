package main

import (
	"flag"

	"github.com/mightyetl/leasefence/goclient"
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

// change is the change record of reason with these flags' ticket and
// approver (empty when not given).
func (c changeRecordFlags) change(reason string) goclient.ChangeRecord {
	return goclient.ChangeRecord{Reason: reason, Ticket: *c.ticket, Approver: *c.approver}
}

// personalReasonProblem says why a reason that looks like personal data or
// a secret is refused.
const personalReasonProblem = sqlbundle.ReasonLooksPersonal

// looksPersonalOrSecret is the database's looks_personal_or_secret rule,
// checked before a command connects.
var looksPersonalOrSecret = sqlbundle.LooksPersonalOrSecret
