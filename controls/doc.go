// Package controls is the one table of leasefence's control identifiers.
//
// # Overview
//
// Auditors ask "which control does this evidence support?". leasefence
// answers with stable identifiers, and this package is the only place they
// are defined. Three tables live here:
//
//   - Controls: what leasefence promises an auditor (for example LF-ACC-01,
//     least-privilege database access), with the SOC 2 Trust Services
//     Criteria and CSAP areas the promise is relevant to.
//   - AuditChecks: the checks `leasectl audit` runs against a live database
//     (for example AUDIT-SEARCH-PATH), each naming the controls it tests.
//   - EvidenceSections: the sections of `leasectl evidence` (for example
//     EVIDENCE-POLICY-HISTORY), each naming the controls it supports.
//
// `leasectl evidence` prints these identifiers next to each piece of
// evidence, and the compliance documents in docs/compliance/ use the same
// identifiers; a documentation test compares the documents with this table,
// so the two cannot drift apart.
//
// # Rules for editing
//
// An identifier, once published, is never reused for a different meaning.
// Retire a control by marking it in its Objective rather than by deleting it.
// Validate reports any reference to an identifier that does not exist.
//
// The framework columns say where a control is relevant. They are not a
// claim that leasefence, on its own, satisfies a criterion or makes a
// service certified.
package controls
