package cli

import (
	"flag"

	"github.com/mightyetl/leasefence/goclient"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// changeFlags are --reason, --ticket and --approver, which every command
// that records a change takes (issue 39): why, the change ticket, checked
// against the change control's ticket pattern, and the login that approved
// the change, which must hold durable_job_operator and, by default, be
// another login than the one making the change.
type changeFlags struct {
	reason, ticket, approver string
}

// addChangeFlags adds --reason, with its usage text, and --ticket and
// --approver to fs.
func addChangeFlags(fs *flag.FlagSet, reasonUsage string) *changeFlags {
	c := &changeFlags{}
	fs.StringVar(&c.reason, "reason", "", reasonUsage)
	fs.StringVar(&c.ticket, "ticket", "", "change ticket of this change, checked against the change control's pattern")
	fs.StringVar(&c.approver, "approver", "", "operator login that approved this change (required where change control asks for one)")
	return c
}

// record is the change record of these flags (empty where not given).
func (c *changeFlags) record() goclient.ChangeRecord {
	return goclient.ChangeRecord{Reason: c.reason, Ticket: c.ticket, Approver: c.approver}
}

// requireReason refuses an empty --reason, given or not.
func (c *changeFlags) requireReason() error {
	if c.reason == "" {
		return usagef("--reason is required")
	}
	return nil
}

// checkPersonal refuses a reason that looks like personal data or a secret
// (the database's looks_personal_or_secret rule) before the command
// connects: also against a database older than migration 014, which
// checked reasons for control characters only.
func (c *changeFlags) checkPersonal() error {
	if sqlbundle.LooksPersonalOrSecret(c.reason) {
		return usagef("--reason %s", sqlbundle.ReasonLooksPersonal)
	}
	return nil
}

// proposeUsage is the usage of --propose on the commands that make one
// change.
const proposeUsage = "propose the change for another operator to approve (maker-checker) instead of making it"
