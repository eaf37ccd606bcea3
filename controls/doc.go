// Package controls is the one table of leasefence's control identifiers:
// what leasefence promises an auditor, the checks that test a live
// database for it, and the sections of the evidence report that show it.
//
// # Overview
//
// Auditors ask "which control does this evidence support?". leasefence
// answers with stable identifiers, and this package is the only place they
// are defined. It holds three tables, each a list of plain values:
//
//   - Controls: what leasefence promises an auditor (for example LF-ACC-01,
//     least-privilege database access), with the SOC 2 Trust Services
//     Criteria and CSAP areas the promise is relevant to. Each is a Control.
//   - AuditChecks: the checks package audit (and `leasectl audit`) runs
//     against a live database (for example AUDIT-SEARCH-PATH), each naming
//     the controls it tests. Each is an AuditCheck; audit.Check is the same
//     type.
//   - EvidenceSections: the sections of package evidence's report (and
//     `leasectl evidence`), for example EVIDENCE-POLICY-HISTORY, each naming
//     the controls it supports. Each is an EvidenceSection.
//
// Every identifier is also a constant, so code can name one without
// spelling the string: the controls (ChangePolicy is "LF-CHG-02", ...),
// the audit checks (CheckSearchPath is "AUDIT-SEARCH-PATH", ...) and the
// evidence sections (SectionPolicy is "EVIDENCE-POLICY-HISTORY", ...).
// ControlByID, AuditCheckByID and EvidenceSectionByID look an identifier
// up, for example to print what a check found by audit.Run tests.
//
// # Where the identifiers show
//
// Each check result of audit.Run carries its check's identifier
// (audit.CheckResult.ID), so a program picks one out by comparing it with a
// constant such as CheckSearchPath; `leasectl audit` starts every finding
// line it prints with it. The evidence report names each section by its
// identifier with the controls it supports, and carries the whole control
// table as its control index. The compliance documents
// in docs/compliance/ use the same identifiers; a documentation test
// compares the documents with this table, so the two cannot drift apart.
//
// # Rules for editing
//
// An identifier, once published, is never reused for a different meaning.
// Retire a control by marking it in its Objective rather than by deleting it.
// Validate reports a malformed or duplicate identifier, an empty text field,
// and any reference to a control that does not exist; its test keeps the
// tables valid.
//
// The framework columns say where a control is relevant. They are not a
// claim that leasefence, on its own, satisfies a criterion or makes a
// service certified.
//
// The package has no dependency beyond the standard library, and the
// functions return copies: changing what they return changes nothing here.
package controls
