package controls_test

import (
	"fmt"

	"github.com/mightyetl/leasefence/controls"
)

// A check names the controls it tests; each can be looked up for its title
// and framework references.
func ExampleAuditCheckByID() {
	check, _ := controls.AuditCheckByID(controls.CheckRenewalPayload)
	fmt.Println(check.ID, "-", check.Title)
	for _, id := range check.Controls {
		c, _ := controls.ControlByID(id)
		fmt.Println(" ", c.ID, c.Title, c.TrustServicesCriteria)
	}
	// Output:
	// AUDIT-RENEWAL-PAYLOAD - Renewal owner cannot touch payloads
	//   LF-PRV-01 Lease renewal cannot read job payloads [C1.1 P4.1 CC6.1]
	//   LF-AUD-02 The live database is audited against the contract [CC4.1 CC7.1]
}

// The evidence report's sections, in report order, with the controls each
// supports.
func ExampleEvidenceSections() {
	for _, s := range controls.EvidenceSections()[:2] {
		fmt.Println(s.ID, s.Controls)
	}
	// Output:
	// EVIDENCE-MIGRATION-VERSION [LF-CHG-01]
	// EVIDENCE-MIGRATION-HISTORY [LF-CHG-01 LF-AUD-01]
}
