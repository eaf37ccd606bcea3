// Package evidence builds leasefence's control-evidence report for
// auditors from a live database: the migration version and history, the
// recorded deployments, the lease policies and their history, renewal
// enablement changes, disposal (what the retention purge and erasure
// removed, as counts, and retention policy changes), aggregate lease
// outcomes, jobs by status, the result of every audit check and the access
// review (audit.ReadAccess, as `leasectl access` shows it), each
// section mapped to the control identifiers (LF-...) that docs/compliance
// uses.
//
// # Overview
//
// Build reads the database and returns a Report; `leasectl evidence` is a
// thin command over it that renders the Report as Markdown or JSON, and a
// team can call it from its own Go code or CI:
//
//	pool, err := pgxpool.New(ctx, auditorURL) // a login granted durable_job_auditor
//	...
//	report, err := evidence.Build(ctx, pool, evidence.Options{Since: start, Until: end})
//	if err != nil {
//		return err // *evidence.ReadError names the read that failed
//	}
//	for _, s := range report.Sections {
//		fmt.Println(s.ID, s.Title) // s.Data is the section's typed value
//	}
//
// A Report encodes to the JSON of `leasectl evidence --format json`.
//
// # The period
//
// Options.Since and Options.Until bound the period (either end may be
// open; a duration back from the database's clock may be given instead of
// a time). The histories hold only the records written in [Since, Until);
// the outcome totals count whole minutes of it, from tallies the database
// keeps 30 days; with Until the lease policies are each queue's policy as
// of Until, reconstructed from the evidence. Jobs by status, the audit
// result and the access review are always as of report time.
//
// # Anchoring the evidence chain
//
// Report.Chain gives the period's evidence record count, first and last
// id, chain head (the record_hash of the last record, which covers every
// record before it) and every record's id and hash (Links). The chain is
// an unkeyed SHA-256 inside the database: the table's owner, with the
// triggers off, can rewrite a record and recompute every later hash, or
// delete the newest records, and AUDIT-EVIDENCE-CHAIN still passes. Keep
// each exported report outside the database: its JSON is an anchor that
// audit.ParseAnchor reads and audit.VerifyAnchor (`leasectl evidence
// verify --anchor`) compares with the live chain, naming the first record
// that differs or is missing, and following a chain that restarted only
// through an evidence_chain_continued record naming the anchor's head.
// WriteExport writes an exported report to a new file (mode 600); a
// signed export's detached SSH signature is in SignatureNamespace, which
// `ssh-keygen -Y verify -n` names.
//
// # The JSON
//
// A Report encodes with schema_version (SchemaVersion), the database's
// name and system identifier, and body_digest, the SHA-256 of the JSON
// without generated_at and body_digest (BodyDigest recomputes it from a
// report's JSON). Durations are in seconds; a record's previous and new
// values are the evidence as stored (intervals as PostgreSQL prints them).
//
// # What it never holds
//
// No payload, claim token, owner id, idempotency key or job id, and no
// erasure's reason (erasures are counted, not listed). Change
// reasons, role and queue names are the values as stored: a renderer that
// writes them into markup must escape them (leasectl does).
package evidence
