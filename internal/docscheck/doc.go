// Package docscheck keeps leasefence's documents honest.
//
// # Overview
//
// The threat model, the operations runbook and the compliance matrix under
// docs/ cite things that live in code: test names, control and audit-check
// identifiers, metric names, alert names, SQL functions and tables, database
// roles and repository paths. A document that cites a test which was renamed
// or deleted would promise evidence that no longer exists. This package reads
// every Markdown file under docs/, collects those citations, and compares
// them with what the repository really contains. `go test
// ./internal/docscheck/` fails and names the file, line and citation of every
// reference that does not resolve.
//
// # What counts as a citation
//
//   - a test name in backticks, such as `TestRenewAfterCancelIsStale`
//     (a subtest path after a slash is ignored); it must be declared as
//     `func TestXxx(` in some *_test.go file of the repository;
//   - a control, audit check or evidence section identifier (LF-ACC-01,
//     AUDIT-SEARCH-PATH, EVIDENCE-POLICY-HISTORY), anywhere in the text; it
//     must be in the tables of package controls;
//   - a metric name starting with leasefence_ (not right after a dot, so
//     the version table public.leasefence_schema_version is not one); it
//     must be one the Prometheus
//     adapter exports (the _bucket, _sum and _count series of a histogram
//     count as the histogram);
//   - an alert name starting with Leasefence and a capital letter; it must be
//     an `alert:` rule in deploy/prometheus/leasefence-alerts.yml;
//   - durable_jobs.name; it must be a function created in
//     sql/functions/*.sql or a table or type created by a
//     migration;
//   - a role name starting with durable_job_; it must be created by the
//     bundle's role file;
//   - a repository path in backticks (starting with sql/, goclient/,
//     controls/, audit/, evidence/, cmd/, internal/, deploy/, docs/, bench/,
//     examples/ or scripts/); it must exist.
//
// # Links to headings
//
// A Markdown link to a heading, [text](file.md#anchor) or [text](#anchor),
// in a file under docs/ or in README.md must name a heading of that file
// by the anchor GitHub gives it (the runbook's table of contents, and the
// links of the compliance matrix and the threat model to single rollout
// steps). The alert rules' runbook_url annotations must each name their own
// alert's runbook heading.
//
// # The seed matrix
//
// The seed request lists twenty test requirements. The compliance matrix
// (docs/compliance/control-matrix.md) has a section "Seed test
// requirements" with a table whose first column is the requirement number.
// Every number from 1 to 20 must have exactly one row, and each row must cite
// at least one test name (which must resolve like any other).
package docscheck
