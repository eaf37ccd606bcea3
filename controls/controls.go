package controls

import (
	"fmt"
	"regexp"
)

// Control is one promise leasefence makes to an auditor, with the places
// where evidence for it comes from.
type Control struct {
	// ID is the stable identifier, such as "LF-ACC-01".
	ID string `json:"id"`
	// Title is a short name for the control.
	Title string `json:"title"`
	// Objective says, in one or two sentences, what the control ensures.
	Objective string `json:"objective"`
	// TrustServicesCriteria lists the SOC 2 Trust Services Criteria (2017,
	// revised points of focus 2022) the control is relevant to, such as "CC8.1".
	TrustServicesCriteria []string `json:"trust_services_criteria"`
	// CSAPAreas lists the areas of Korea's Cloud Security Assurance Program
	// (CSAP, SaaS) the control is relevant to, named in words.
	CSAPAreas []string `json:"csap_areas"`
}

// AuditCheck is one check `leasectl audit` runs against a live database.
type AuditCheck struct {
	// ID is the stable identifier, such as "AUDIT-SEARCH-PATH"; every finding
	// the check reports starts with it.
	ID string `json:"id"`
	// Title is a short name for the check.
	Title string `json:"title"`
	// Passes says what is true of a database that passes the check.
	Passes string `json:"passes"`
	// Controls lists the IDs of the controls the check tests.
	Controls []string `json:"controls"`
}

// EvidenceSection is one section of the `leasectl evidence` report.
type EvidenceSection struct {
	// ID is the stable identifier, such as "EVIDENCE-POLICY-HISTORY".
	ID string `json:"id"`
	// Title is the section heading in the report.
	Title string `json:"title"`
	// Shows says what the section contains.
	Shows string `json:"shows"`
	// Controls lists the IDs of the controls the section supports.
	Controls []string `json:"controls"`
}

// Control identifiers, usable as constants in code and tests. Each names
// one entry of Controls.
const (
	// ChangeMigrations is LF-CHG-01: schema changes are versioned and recorded.
	ChangeMigrations = "LF-CHG-01"
	// ChangePolicy is LF-CHG-02: every lease policy change is recorded, with its ticket and approver when given.
	ChangePolicy = "LF-CHG-02"
	// ChangeEnablement is LF-CHG-03: renewal enablement changes are recorded.
	ChangeEnablement = "LF-CHG-03"
	// ChangeDeployment is LF-CHG-04: deployment versions are recorded.
	ChangeDeployment = "LF-CHG-04"
	// ChangeApproval is LF-CHG-05: where maker-checker is on, a change takes effect only when a second operator approves it in its own session.
	ChangeApproval = "LF-CHG-05"
	// ChangeOperatorActions is LF-CHG-06: operator actions on single jobs (cancel, replay, erasure) are recorded.
	ChangeOperatorActions = "LF-CHG-06"
	// AccessLeastPrivilege is LF-ACC-01: runtime roles can only call functions.
	AccessLeastPrivilege = "LF-ACC-01"
	// AccessDefinerRoles is LF-ACC-02: function owners hold no elevated attributes.
	AccessDefinerRoles = "LF-ACC-02"
	// AccessDefinerPath is LF-ACC-03: definer functions cannot be hijacked through search_path.
	AccessDefinerPath = "LF-ACC-03"
	// AccessReview is LF-ACC-04: who holds which leasefence access is reviewable, and excess access is a finding.
	AccessReview = "LF-ACC-04"
	// PrivacyPayloadApart is LF-PRV-01: lease renewal cannot read job payloads.
	PrivacyPayloadApart = "LF-PRV-01"
	// PrivacyTelemetry is LF-PRV-02: telemetry and evidence are payload-blind.
	PrivacyTelemetry = "LF-PRV-02"
	// PrivacyDisposal is LF-PRV-03: finished jobs' data is disposed of on schedule and on request, and each disposal is recorded as counts.
	PrivacyDisposal = "LF-PRV-03"
	// IntegrityFencing is LF-INT-01: only the exact live claim can renew or finish a job.
	IntegrityFencing = "LF-INT-01"
	// IntegrityOutcomes is LF-INT-02: stale renewals and reclaims are counted.
	IntegrityOutcomes = "LF-INT-02"
	// AvailabilityHealth is LF-AVL-01: lease health is observable per queue.
	AvailabilityHealth = "LF-AVL-01"
	// AvailabilityAlerts is LF-AVL-02: lease problems raise alerts.
	AvailabilityAlerts = "LF-AVL-02"
	// AvailabilityFailover is LF-AVL-03: a failover is recorded and costs
	// jobs no attempt.
	AvailabilityFailover = "LF-AVL-03"
	// AuditAppendOnly is LF-AUD-01: control evidence is append-only and tamper-evident.
	AuditAppendOnly = "LF-AUD-01"
	// AuditConfiguration is LF-AUD-02: the live database is audited against the contract.
	AuditConfiguration = "LF-AUD-02"
)

// Audit check identifiers. Each names one entry of AuditChecks and starts
// every finding line that check prints.
const (
	// CheckSearchPath: every SECURITY DEFINER function pins search_path.
	CheckSearchPath = "AUDIT-SEARCH-PATH"
	// CheckPublicExecute: PUBLIC executes no function of the schema.
	CheckPublicExecute = "AUDIT-PUBLIC-EXECUTE"
	// CheckRuntimePrivileges: runtime roles hold no table, sequence or column privilege.
	CheckRuntimePrivileges = "AUDIT-RUNTIME-TABLE-PRIVILEGES"
	// CheckDefinerAttributes: no definer role is superuser or has BYPASSRLS, CREATEROLE, CREATEDB.
	CheckDefinerAttributes = "AUDIT-DEFINER-ATTRIBUTES"
	// CheckRenewalPayload: the renewal functions' owner cannot touch the payload table.
	CheckRenewalPayload = "AUDIT-RENEWAL-PAYLOAD"
	// CheckSchemaCreate: nobody but the bootstrap superuser can create in a definer's search_path.
	CheckSchemaCreate = "AUDIT-SEARCH-PATH-CREATE"
	// CheckEvidenceAppendOnly: the evidence table refuses updates and deletes.
	CheckEvidenceAppendOnly = "AUDIT-EVIDENCE-APPEND-ONLY"
	// CheckMigrationVersion: the database is at the newest bundle version.
	CheckMigrationVersion = "AUDIT-MIGRATION-VERSION"
	// CheckObjectDependencies: the bundle's objects depend only on pg_catalog and durable_jobs.
	CheckObjectDependencies = "AUDIT-OBJECT-DEPENDENCIES"
	// CheckDefinerOwners: the definer owner roles cannot log in and have no members.
	CheckDefinerOwners = "AUDIT-DEFINER-OWNERS"
	// CheckEvidenceTrigger: the evidence table has its own owner, and its triggers are enabled and run that owner's guard.
	CheckEvidenceTrigger = "AUDIT-EVIDENCE-TRIGGER"
	// CheckFunctionDrift: every function is what its recorded version installs.
	CheckFunctionDrift = "AUDIT-FUNCTION-DRIFT"
	// CheckServerLogSecrets: no runtime login's log settings write bind parameters to the server log.
	CheckServerLogSecrets = "AUDIT-SERVER-LOG-SECRETS"
	// CheckUnencryptedSessions: no runtime login has a TCP session without TLS.
	CheckUnencryptedSessions = "AUDIT-UNENCRYPTED-SESSIONS"
	// CheckLoginTimeouts: no login that locks job rows can hold one for ever.
	CheckLoginTimeouts = "AUDIT-RUNTIME-LOGIN-TIMEOUTS"
	// CheckPolicyEvidence: every queue's live policy is what its last evidence record says.
	CheckPolicyEvidence = "AUDIT-POLICY-MATCHES-EVIDENCE"
	// CheckControlEvidence: the retention policy and the change-control setting record their own changes and match their evidence.
	CheckControlEvidence = "AUDIT-CONTROLS-MATCH-EVIDENCE"
	// CheckJobStatuses: every finished job's status is explained by a fenced write or a recorded action.
	CheckJobStatuses = "AUDIT-JOB-STATUSES-EXPLAINED"
	// CheckEvidenceChain: the evidence hash chain is intact and its triggers are in force.
	CheckEvidenceChain = "AUDIT-EVIDENCE-CHAIN"
	// CheckAccessReview: no login or PUBLIC holds table access, a definer owner role, or both worker and operator.
	CheckAccessReview = "AUDIT-ACCESS-REVIEW"
	// CheckGenerationFloor: the trigger that keeps fencing generations increasing across promotions is in force.
	CheckGenerationFloor = "AUDIT-GENERATION-FLOOR"
	// CheckSecondPrimary: no other host of the connection URL is a second primary of the same cluster.
	CheckSecondPrimary = "AUDIT-SECOND-PRIMARY"
	// CheckSynchronousReplication: the server commits with a synchronous standby (a warning, never a failure).
	CheckSynchronousReplication = "AUDIT-SYNCHRONOUS-REPLICATION"
	// CheckTLSConfiguration: no pg_hba rule or listen setting lets a runtime login connect without TLS from beyond loopback.
	CheckTLSConfiguration = "AUDIT-TLS-CONFIGURATION"
	// CheckEvidenceAnchor: the live evidence chain holds an earlier export's chain head (with --evidence-anchor).
	CheckEvidenceAnchor = "AUDIT-EVIDENCE-ANCHOR"
	// CheckServerIsPrimary: the audited server is a primary, not a standby.
	CheckServerIsPrimary = "AUDIT-SERVER-IS-PRIMARY"
	// CheckRoleChangeLogging: pgaudit logs role changes (a warning unless the audit requires it).
	CheckRoleChangeLogging = "AUDIT-ROLE-CHANGE-LOGGING"
)

// Evidence section identifiers. Each names one entry of EvidenceSections.
const (
	// SectionMigration is the current migration version and when it was applied.
	SectionMigration = "EVIDENCE-MIGRATION-VERSION"
	// SectionDeployments lists the recorded deployment versions.
	SectionDeployments = "EVIDENCE-DEPLOYMENTS"
	// SectionPolicies is the lease policy in force per queue.
	SectionPolicies = "EVIDENCE-CURRENT-POLICIES"
	// SectionPolicy is the history of lease policy changes.
	SectionPolicy = "EVIDENCE-POLICY-HISTORY"
	// SectionEnablement is the history of renewal enablement changes.
	SectionEnablement = "EVIDENCE-ENABLEMENT-HISTORY"
	// SectionMigrations is the history of migrations applied and reverted.
	SectionMigrations = "EVIDENCE-MIGRATION-HISTORY"
	// SectionDisposal is what the retention purge and erasure disposed of, as counts, and the retention policy changes.
	SectionDisposal = "EVIDENCE-DISPOSAL"
	// SectionOutcomes is the aggregate of stale renewals and reclaims.
	SectionOutcomes = "EVIDENCE-LEASE-OUTCOMES"
	// SectionJobStatus is the count of jobs per queue and status.
	SectionJobStatus = "EVIDENCE-JOB-STATUS"
	// SectionAudit is the result of every audit check.
	SectionAudit = "EVIDENCE-AUDIT-RESULT"
	// SectionAccess is the access review: every login's leasefence roles and grants outside the bundle's roles.
	SectionAccess = "EVIDENCE-ACCESS-REVIEW"
	// SectionApprovals lists the maker-checker proposals, approvals and rejections.
	SectionApprovals = "EVIDENCE-APPROVALS"
	// SectionOperatorActions counts the operator actions on single jobs per queue, action and login.
	SectionOperatorActions = "EVIDENCE-OPERATOR-ACTIONS"
	// SectionProcessing counts what each queue processed in the period.
	SectionProcessing = "EVIDENCE-PROCESSING"
	// SectionAvailability lists the promotions and restarts of the server
	// the bundle observed in the period.
	SectionAvailability = "EVIDENCE-AVAILABILITY"
)

var controlTable = []Control{
	{ChangeMigrations, "Schema changes are versioned and recorded",
		"Every migration applied or reverted is recorded with its version and time, and the live version is the one the released binary expects.",
		[]string{"CC8.1"}, []string{"Change management"}},
	{ChangePolicy, "Lease policy changes are recorded, with ticket and approver",
		"Every change of the lease policy table, through set_queue_lease_policy or directly, is recorded by a trigger on the table with the old and new values, the reason, ticket and approver given (an approver is optional and never the changer; 'direct table change without a reason' when none) and session_user as the changer; invalid policies and reasons that look like personal data or a secret are refused by the database. Approval itself happens in the ticketing system: the evidence records who was named, not that they approved.",
		[]string{"CC8.1", "CC5.2"}, []string{"Change management", "Configuration management"}},
	{ChangeEnablement, "Renewal enablement changes are recorded",
		"Switching lease renewal off or on for a queue is recorded separately, with reason and role, so an incident timeline can show it.",
		[]string{"CC8.1", "CC7.4"}, []string{"Change management", "Incident management"}},
	{ChangeDeployment, "Deployment versions are recorded",
		"The deploying pipeline (the role that applies the bundle) records each deployed application version, with a reason, in the same append-only evidence.",
		[]string{"CC8.1"}, []string{"Change management"}},
	{ChangeApproval, "Approvals are acts of a second operator",
		"With maker-checker on (change-control set --require-second-operator), a lease policy, retention or change-control change is proposed by one operator login and takes effect only when another operator login approves it in its own session before the proposal expires; proposal, approval or rejection, and the change are each recorded with login and time. An approver named in any change must hold durable_job_operator.",
		[]string{"CC8.1", "CC5.2"}, []string{"Change management"}},
	{ChangeOperatorActions, "Operator actions on jobs are recorded",
		"An operator's cancel, replay and payload erasure carry a checked reason (and the ticket and approver change control asks for), are kept in the job's action trail (leasectl jobs show) and are chained evidence naming the queue and the login, never the job.",
		[]string{"CC8.1", "CC7.4"}, []string{"Change management", "Incident management"}},
	{AccessLeastPrivilege, "Runtime roles can only call functions",
		"Application roles execute only the functions of their job (produce, work, operate, audit) and hold no privilege on any table, view or sequence; PUBLIC executes nothing.",
		[]string{"CC6.1", "CC6.3"}, []string{"Access control"}},
	{AccessDefinerRoles, "Function owners hold no elevated attributes",
		"Each function family is owned by its own NOLOGIN role that is not a superuser and has no BYPASSRLS, CREATEROLE or CREATEDB.",
		[]string{"CC6.1", "CC6.3"}, []string{"Access control"}},
	{AccessDefinerPath, "Definer functions cannot be hijacked through search_path",
		"Every SECURITY DEFINER function pins search_path to pg_catalog, pg_temp, and no role other than the bootstrap superuser may create objects in those schemas.",
		[]string{"CC6.1", "CC6.8"}, []string{"Access control", "Secure development"}},
	{AccessReview, "Access to leasefence is reviewable",
		"`leasectl access` lists every login with each leasefence role it holds (directly or inherited), the grantor and its SUPERUSER, BYPASSRLS and CREATEROLE attributes as of a database time, and every table, column or sequence privilege in the schema granted outside the bundle's roles; the audit reports a login or PUBLIC with a table, column or sequence privilege in the schema, a login holding a definer owner role, and a login holding both a worker and an operator role unless accepted by a role comment.",
		[]string{"CC6.1", "CC6.2", "CC6.3"}, []string{"Access control"}},
	{PrivacyPayloadApart, "Lease renewal cannot read job payloads",
		"Payloads live in their own table; the renewal function's owner holds no privilege on it, so renewal can neither read nor emit personal data.",
		[]string{"C1.1", "P4.1", "CC6.1"}, []string{"Personal information protection", "Access control"}},
	{PrivacyTelemetry, "Telemetry and evidence are payload-blind",
		"Metrics, health, audit and evidence output carry only bounded labels (queue, outcome); never payloads, claim tokens, owner ids, principals, idempotency keys, SQL or error text.",
		[]string{"C1.1", "P4.1", "CC7.2"}, []string{"Personal information protection", "Logging and monitoring"}},
	{PrivacyDisposal, "Finished jobs' data is disposed of, with evidence",
		"The retention purge deletes finished jobs' payloads and result documents, then their rows, after each queue's retention period, and erasure removes one finished job's payload on request; each purge call and each erasure writes a chained evidence record with counts per queue and kind (never a job id), and each retention policy change is recorded. Control evidence itself is never purged.",
		[]string{"C1.2", "P4.2", "CC8.1"}, []string{"Personal information protection", "Change management"}},
	{IntegrityFencing, "Only the exact live claim can renew or finish a job",
		"Renewals and terminal writes are fenced on job, token digest, owner, login role, status and database time; a stale claim renews nothing and its terminal write aborts its transaction.",
		[]string{"PI1.3", "PI1.4"}, []string{"Service continuity", "Data integrity"}},
	{IntegrityOutcomes, "Stale renewals and reclaims are counted",
		"The database keeps bounded per-minute tallies of stale renewals and reclaims, so a loss of authority is visible and never silently retried as success.",
		[]string{"PI1.4", "CC7.2"}, []string{"Logging and monitoring", "Data integrity"}},
	{AvailabilityHealth, "Lease health is observable per queue",
		"Operators can read, per queue, running jobs, leases about to expire, expired leases awaiting reclaim, reclaims and stale renewals, from payload-blind functions.",
		[]string{"A1.1", "CC7.2"}, []string{"Service continuity", "Logging and monitoring"}},
	{AvailabilityAlerts, "Lease problems raise alerts",
		"Alert rules fire on renewal database failures, stale-claim rate (the client's and the database's own gauge), scheduler lag, safety-margin exhaustion, abnormal reclaim frequency and a collector that stopped reporting; each rule carries a runbook_url and is unit-tested, and the history of fired alerts can be exported for an audit period (docs/operations/runbook.md).",
		[]string{"CC7.2", "CC7.3", "A1.2"}, []string{"Incident management", "Logging and monitoring"}},
	{AvailabilityFailover, "A failover is recorded and costs jobs no attempt",
		"A claim lost with the database (the server restarted or was promoted since the claim) is reclaimed without charging its job an attempt, at most three times a job, and counted apart as a failover reclaim in lease health, the Prometheus collector and the lease outcomes; each promotion (a new WAL timeline) and restart the bundle observes is a chained evidence record with its time and timelines, never a job id (server_availability, called by health, the collector and the evidence report), and an alert fires on a promotion or a restart.",
		[]string{"A1.2", "CC7.3", "CC7.4"}, []string{"Service continuity", "Incident management"}},
	{AuditAppendOnly, "Control evidence is append-only and tamper-evident",
		"Triggers refuse UPDATE, DELETE and TRUNCATE of control-evidence records for every role that cannot disable them, and no runtime role holds a table privilege. A superuser or the table owner can disable a trigger, so each record also carries a hash over its content and the previous record's hash: `leasectl audit` (AUDIT-EVIDENCE-CHAIN) reports a record deleted, altered or reordered with the hashes left as they were. The chain is unkeyed and kept in the same database, so the table owner with the triggers off can rewrite a record and recompute every later hash, or delete the newest records, and the audit passes; each evidence report prints its period's record count, first and last id and chain head and lists every record's hash, so that a report kept outside (signed with an SSH key, on write-once storage) is an anchor: `leasectl evidence verify --anchor` and AUDIT-EVIDENCE-ANCHOR name the first record of it that the live chain lacks or holds with another hash, and follow a chain that restarted only through an evidence_chain_continued record naming the anchor's head.",
		[]string{"CC7.2", "CC8.1"}, []string{"Logging and monitoring", "Change management"}},
	{AuditConfiguration, "The live database is audited against the contract",
		"`leasectl audit` checks the live catalogs against the contract and exits non-zero on any finding; its JSON names the database time, database, bundle versions and body digest, and its result is part of the evidence report.",
		[]string{"CC4.1", "CC7.1"}, []string{"Compliance", "Vulnerability management"}},
}

var auditCheckTable = []AuditCheck{
	{CheckSearchPath, "Definer functions pin search_path",
		"Every SECURITY DEFINER function in schema durable_jobs has search_path exactly pg_catalog, pg_temp.",
		[]string{AccessDefinerPath, AuditConfiguration}},
	{CheckPublicExecute, "PUBLIC executes nothing",
		"PUBLIC holds EXECUTE on no function in schema durable_jobs, private helpers included.",
		[]string{AccessLeastPrivilege, AuditConfiguration}},
	{CheckRuntimePrivileges, "Runtime roles hold no table privilege",
		"The four runtime roles (and PUBLIC through them) hold no table, view, sequence or column privilege in schema durable_jobs.",
		[]string{AccessLeastPrivilege, AuditAppendOnly, AuditConfiguration}},
	{CheckDefinerAttributes, "Definer roles are not elevated",
		"No owner of a function in schema durable_jobs is a superuser or has BYPASSRLS, CREATEROLE or CREATEDB.",
		[]string{AccessDefinerRoles, AuditConfiguration}},
	{CheckRenewalPayload, "Renewal owner cannot touch payloads",
		"The owners of renew_job_lease and renew_job_leases hold no privilege on durable_jobs.job_payload_record.",
		[]string{PrivacyPayloadApart, AuditConfiguration}},
	{CheckSchemaCreate, "Nobody can plant objects on a definer's search_path",
		"No role other than the bootstrap superuser holds CREATE on, or owns, a schema named in a definer function's search_path.",
		[]string{AccessDefinerPath, AuditConfiguration}},
	{CheckEvidenceAppendOnly, "Evidence refuses updates and deletes",
		"Enabled BEFORE UPDATE and BEFORE DELETE row triggers guard durable_jobs.control_evidence_record, and a trial UPDATE and DELETE (rolled back) are refused.",
		[]string{AuditAppendOnly, AuditConfiguration}},
	{CheckMigrationVersion, "Migration version is current",
		"The bundle's migration version recorded in the database equals the newest version this leasectl binary carries.",
		[]string{ChangeMigrations, AuditConfiguration}},
	{CheckObjectDependencies, "Bundle objects bind only system and bundle objects",
		"Every function, constraint, column default, index, trigger and rule in schema durable_jobs depends, in pg_depend, only on objects of pg_catalog and durable_jobs: nothing bound an operator, function or type planted in another schema.",
		[]string{AccessDefinerPath, AuditConfiguration}},
	{CheckDefinerOwners, "Definer owners cannot be assumed",
		"The definer owner roles (durable_job_*_owner) are NOLOGIN and have no members, so no login can SET ROLE to one and write its tables directly.",
		[]string{AccessDefinerRoles, AuditConfiguration}},
	{CheckEvidenceTrigger, "Evidence table and guard have an owner of their own",
		"durable_jobs.control_evidence_record is owned by durable_job_evidence_owner, which has no elevated attribute; both append-only triggers of the table exist, fire in every session (enabled O or A) and execute durable_jobs.refuse_evidence_change(), owned by the table's owner.",
		[]string{AuditAppendOnly, AuditConfiguration}},
	{CheckFunctionDrift, "Functions are what their version installs",
		"Every function in schema durable_jobs has the definition, owner and EXECUTE grants that the bundle's manifest records for the database's migration version: none replaced by hand, none missing, none extra.",
		[]string{ChangeMigrations, AccessDefinerPath, AuditConfiguration}},
	{CheckServerLogSecrets, "Server log gets no bind parameters",
		"For every login in a runtime role, the log settings in force for it (its own, the database's, the server's) do not write bind parameters, which carry claim tokens and payloads, to the server log: log_parameter_max_length is 0 wherever log_statement is mod or all or log_min_duration_statement is not -1, and log_parameter_max_length_on_error is 0.",
		[]string{PrivacyTelemetry, AuditConfiguration}},
	{CheckUnencryptedSessions, "Runtime sessions are encrypted",
		"No session of a login in a runtime role in this database is a TCP connection without TLS (pg_stat_ssl); local socket sessions are not counted. Without pg_read_all_stats the auditing login sees only its own sessions. The audit's own session is no TCP connection from beyond loopback without TLS or GSSAPI encryption.",
		[]string{PrivacyTelemetry, AuditConfiguration}},
	{CheckTLSConfiguration, "Runtime logins cannot connect without TLS from beyond loopback",
		"The server does not listen beyond loopback (listen_addresses other than localhost, 127.0.0.0/8 or ::1) with ssl off, and no pg_hba rule (pg_hba_file_rules) of type host, hostnossl or hostnogssenc that is not reject admits a login of a runtime role (all, the login, or +role of a role it holds) to this database from beyond loopback. A server that accepts only loopback and socket connections passes. A login that cannot read pg_hba_file_rules (superusers can; others need a grant) gets a warning that the rules were not checked.",
		[]string{PrivacyTelemetry, AccessLeastPrivilege, AuditConfiguration}},
	{CheckLoginTimeouts, "Runtime logins cannot hold a job row for ever",
		"Every login in the producer, worker or operator role has a non-zero statement_timeout and idle_in_transaction_session_timeout in force (its own, the database's or the server's), so a job row it locks (a completion or cancel left open) is held for a bounded time and cannot block reclaim or cancel past it.",
		[]string{IntegrityFencing, AvailabilityHealth, AuditConfiguration}},
	{CheckPolicyEvidence, "Live policy matches its evidence",
		"For every queue, the live row of durable_jobs.queue_lease_policy equals what the queue's last lease_policy_changed record says it became (a row removed by the evidence is absent), so no policy was changed without evidence.",
		[]string{ChangePolicy, ChangeEnablement, AuditConfiguration}},
	{CheckControlEvidence, "Every control table matches its evidence",
		"From bundle version 26, the retention policy and the change-control setting record every change of their own (their stamp, evidence and no-removal triggers exist and fire in every session), and each row equals what its last evidence record says (durable_jobs.control_evidence_mismatches(), the baseline in migration 026's record included), so no control was changed without evidence.",
		[]string{ChangePolicy, AuditConfiguration}},
	{CheckJobStatuses, "Job statuses are explained",
		"From bundle version 26, no SUCCEEDED job lacks a SUCCEEDED outcome at its current fencing generation and no FAILED job with attempts left lacks a FAILED one (durable_jobs.job_status_mismatches(), counts per queue and status, no job ids), so no status was set by hand.",
		[]string{IntegrityFencing, AuditConfiguration}},
	{CheckEvidenceChain, "Evidence hash chain is intact",
		"Every control-evidence record's record_hash is sha256(previous_record_hash || its content digest), each links to the record before it (32 zero bytes for the first), and the chain and policy-evidence triggers exist and fire in every session.",
		[]string{AuditAppendOnly, ChangePolicy, AuditConfiguration}},
	{CheckEvidenceAnchor, "Evidence chain holds an earlier export",
		"With `--evidence-anchor FILE` (an earlier `leasectl evidence` JSON or `migrate down --evidence-export` file): the live chain holds every record of the export with the same hashes, recomputed from each record's content, and continues from the last one; or it holds them up to some record (or none, after a reinstall) and an evidence_chain_continued record after it names exactly the export's last id and hash (the live records between are named). A record rewritten with the chain recomputed, the newest records deleted, an older backup restored, or a chain begun anew without a continuation is a finding naming the first record that differs or is missing. Without an anchor there is nothing to compare and the check passes.",
		[]string{AuditAppendOnly, ChangeMigrations, AuditConfiguration}},
	{CheckAccessReview, "Logins hold only the access their job needs",
		"No login (superusers aside) or PUBLIC holds a table, column or sequence privilege in schema durable_jobs; no login holds a definer owner role, directly or inherited; no login holds both durable_job_worker and durable_job_operator unless its role comment says 'leasefence: separation of duties accepted: <TICKET-1>'.",
		[]string{AccessReview, AccessLeastPrivilege, PrivacyPayloadApart, AuditConfiguration}},
	{CheckRoleChangeLogging, "Role changes are logged",
		"pgaudit is loaded (shared_preload_libraries) and pgaudit.log, as in force for the auditing session, includes the role class, so every GRANT, REVOKE, CREATE, ALTER and DROP ROLE (of a bundle role too) is written to the server log with the login that ran it. Otherwise a warning, which never fails the audit (a plain local install audits clean); with `--require-pgaudit` (audit.RequireRoleChangeLogging), for deployments under audit, a finding. A login that cannot read shared_preload_libraries (superusers and pg_read_all_settings can) is told it cannot tell.",
		[]string{AccessReview, AuditConfiguration}},
	{CheckGenerationFloor, "Fencing generations survive promotion",
		"Every claim's generation is at least its WAL timeline's floor. From bundle version 17 the floor is in durable_jobs.claim_next_jobs: its installed source computes the floor and claims with GREATEST(generation + 1, floor) (any other change to it is AUDIT-FUNCTION-DRIFT's). At versions 11 to 16 the trigger job_record_generation_floor of migration 011 exists on durable_jobs.job_record, fires in every session (enabled O or A), executes durable_jobs.raise_generation_to_floor() and is defined exactly as 011 defines it (the function's body is compared by AUDIT-FUNCTION-DRIFT). It reports nothing on a bundle older than 011 (AUDIT-MIGRATION-VERSION does).",
		[]string{IntegrityFencing, AuditConfiguration}},
	{CheckServerIsPrimary, "The audited server is a primary",
		"pg_is_in_recovery() is false: the audit runs against the primary, which takes the writes and records the evidence. A standby shows the primary's state only as far as it has replayed, and its settings (synchronous_standby_names) mean nothing until it is promoted; pointing at one is a finding, and AUDIT-SYNCHRONOUS-REPLICATION does not warn there.",
		[]string{IntegrityFencing, AuditConfiguration}},
	{CheckSecondPrimary, "No second primary on the URL's other hosts",
		"No other host of the connection URL (a multi-host URL, as on failover) that the audit can reach is also a primary (pg_is_in_recovery() false) with the same system identifier (pg_control_system()): an old primary that came back after a promotion issues fencing generations and accepts terminal writes beside the new one. A host it cannot reach is not a finding.",
		[]string{IntegrityFencing, AuditConfiguration}},
	{CheckSynchronousReplication, "Commits wait for a synchronous standby",
		"synchronous_standby_names is set, as the runbook requires, so an acknowledged completion survives a failover. A warning, not a finding: it is reported and never fails the audit (a single server without a standby is a valid deployment).",
		[]string{IntegrityFencing, AuditConfiguration}},
}

var evidenceSectionTable = []EvidenceSection{
	{SectionMigration, "Migration version",
		"The bundle's current migration version and when it was applied.",
		[]string{ChangeMigrations}},
	{SectionMigrations, "Migration history",
		"Every migration applied or reverted in the period that the evidence holds, with the operator's reason (from the evidence-chain migration on); a database migrated down to 0 and up again has lost the records before, unless they were exported (`leasectl migrate down --to 0 --discard-evidence --evidence-export PATH`).",
		[]string{ChangeMigrations, AuditAppendOnly}},
	{SectionDeployments, "Deployment versions",
		"Every deployment version recorded with `leasectl deployment record`, with reason and role.",
		[]string{ChangeDeployment, AuditAppendOnly}},
	{SectionPolicies, "Current lease policies",
		"The lease policy in force for each queue and the default '*', with who changed it last and when: at report time, or with --until as of the period's end, reconstructed from the evidence.",
		[]string{ChangePolicy}},
	{SectionPolicy, "Lease policy history",
		"Every recorded lease policy change in the period with old and new values, reason, ticket, approver and role, every change of the change-control setting that governs them (ticket pattern, approver rules: kind change_control_changed), and each queue's policy as of the period's end reconstructed from the evidence.",
		[]string{ChangePolicy, AuditAppendOnly}},
	{SectionApprovals, "Approvals",
		"Every maker-checker record of the period: each proposal (change_proposed: kind, queue, proposed values, expiry, reason, ticket, proposing login), approval (change_approved: the approving login, with the proposer and when it proposed) and rejection (change_rejected), each followed in the chain by the change an approval applied.",
		[]string{ChangeApproval, AuditAppendOnly}},
	{SectionOperatorActions, "Operator actions on jobs",
		"How many jobs each login cancelled (job_cancelled, with a reason), replayed (job_replayed) and erased the payload of (job_payload_erased) in each queue during the period: counts only, never a job id or a reason. A producer application's own cancel is processing, not an operator action, and is not counted.",
		[]string{ChangeOperatorActions, AuditAppendOnly}},
	{SectionEnablement, "Renewal enablement history",
		"Every change of a queue's renewal switch with reason and role.",
		[]string{ChangeEnablement, AuditAppendOnly}},
	{SectionDisposal, "Disposal",
		"What the retention purge (job_data_purged) and erasure (job_payload_erased) disposed of in the period, summed per queue and kind, and erasures per queue and job status: counts only, never a job id or an erasure's reason; and every retention policy change (retention_policy_changed) with old and new values, reason and role. A job_record count is a job whose row was deleted with its payload, outcome ledger and result documents, which are not counted apart; a payload count is a payload deleted with the job's result documents cleared. Lease outcome tallies older than 30 days are deleted without a record; control evidence is never purged.",
		[]string{PrivacyDisposal, PrivacyTelemetry, AuditAppendOnly}},
	{SectionOutcomes, "Aggregate lease outcomes",
		"Reclaims, stale renewals and stale releases per queue over the whole minutes inside the report window (the tallies count per minute; the report's lease_outcomes_window names the minutes counted; queue '*' holds the stale calls not charged to a queue), from bounded tallies kept for 30 days only (the report warns when its period starts earlier).",
		[]string{IntegrityOutcomes, IntegrityFencing, AvailabilityHealth}},
	{SectionProcessing, "Processing in the period",
		"Per queue, jobs enqueued, succeeded, retried, failed (outcomes workers recorded), cancelled and replayed during the period, each counted when it happened (durable_jobs.processing_counts), so a closed period's figures do not change when a job changes later; they drop only when the retention purge removes the period's jobs. Counts only.",
		[]string{IntegrityOutcomes, AvailabilityHealth, PrivacyTelemetry}},
	{SectionAvailability, "Availability events",
		"Every promotion (server_timeline_changed: the new WAL timeline and the one before) and restart (server_restarted: the same timeline, a new start) of the database server that the bundle observed in the period, each with the server's start time and when it was seen: at the first health read, metrics scrape or evidence report after it, and no later than this report. Timelines and times only, never a job id; the failover reclaims they caused are in the aggregate lease outcomes (failover_reclaim).",
		[]string{AvailabilityFailover, AuditAppendOnly}},
	{SectionJobStatus, "Jobs by status",
		"How many jobs each queue holds in each status at report time (not as of the period's end); counts only.",
		[]string{AvailabilityHealth, PrivacyTelemetry}},
	{SectionAudit, "Audit result",
		"The result of every `leasectl audit` check at report time, with any findings.",
		[]string{AuditConfiguration, AccessLeastPrivilege, AccessDefinerRoles, AccessDefinerPath, PrivacyPayloadApart, AuditAppendOnly}},
	{SectionAccess, "Access review",
		"Every login of the cluster with its SUPERUSER, BYPASSRLS and CREATEROLE attributes and each leasefence role it holds (directly or inherited, with the role granted and the grantor), and every table, column or sequence privilege in schema durable_jobs granted outside the bundle's roles, as `leasectl access` shows them, at report time (the report's generated_at), with the review's own body digest (the same as `leasectl access --output json` gives for the same access). Who was granted or revoked a role, and when, is in pgaudit's role log, not here.",
		[]string{AccessReview, AccessLeastPrivilege}},
}

// Controls returns every control, in a fixed order. The slice is a copy;
// changing it changes nothing here.
func Controls() []Control {
	out := make([]Control, len(controlTable))
	for i, c := range controlTable {
		c.TrustServicesCriteria = append([]string(nil), c.TrustServicesCriteria...)
		c.CSAPAreas = append([]string(nil), c.CSAPAreas...)
		out[i] = c
	}
	return out
}

// AuditChecks returns every audit check, in the order `leasectl audit` runs
// them. The slice is a copy.
func AuditChecks() []AuditCheck {
	out := make([]AuditCheck, len(auditCheckTable))
	for i, c := range auditCheckTable {
		c.Controls = append([]string(nil), c.Controls...)
		out[i] = c
	}
	return out
}

// EvidenceSections returns every section of the evidence report, in report
// order. The slice is a copy.
func EvidenceSections() []EvidenceSection {
	out := make([]EvidenceSection, len(evidenceSectionTable))
	for i, s := range evidenceSectionTable {
		s.Controls = append([]string(nil), s.Controls...)
		out[i] = s
	}
	return out
}

// ControlByID returns the control with the given ID, and false when there is
// none.
func ControlByID(id string) (Control, bool) {
	for _, c := range Controls() {
		if c.ID == id {
			return c, true
		}
	}
	return Control{}, false
}

// AuditCheckByID returns the audit check with the given ID, and false when
// there is none.
func AuditCheckByID(id string) (AuditCheck, bool) {
	for _, c := range AuditChecks() {
		if c.ID == id {
			return c, true
		}
	}
	return AuditCheck{}, false
}

// EvidenceSectionByID returns the evidence section with the given ID, and
// false when there is none.
func EvidenceSectionByID(id string) (EvidenceSection, bool) {
	for _, s := range EvidenceSections() {
		if s.ID == id {
			return s, true
		}
	}
	return EvidenceSection{}, false
}

var (
	controlIDPattern = regexp.MustCompile(`^LF-[A-Z]{3}-[0-9]{2}$`)
	checkIDPattern   = regexp.MustCompile(`^AUDIT-[A-Z]+(-[A-Z]+)*$`)
	sectionIDPattern = regexp.MustCompile(`^EVIDENCE-[A-Z]+(-[A-Z]+)*$`)
)

// Validate checks the tables for consistency: identifiers are well-formed
// and unique, every text field is filled in, every control has at least one
// framework reference, and every control an audit check or evidence section
// names exists. It returns nil when all is well.
func Validate() error {
	seen := map[string]bool{}
	for _, c := range controlTable {
		if !controlIDPattern.MatchString(c.ID) {
			return fmt.Errorf("control id %q is not of the form LF-XXX-00", c.ID)
		}
		if seen[c.ID] {
			return fmt.Errorf("control id %q is used twice", c.ID)
		}
		seen[c.ID] = true
		if c.Title == "" || c.Objective == "" {
			return fmt.Errorf("control %s lacks a title or objective", c.ID)
		}
		if len(c.TrustServicesCriteria) == 0 || len(c.CSAPAreas) == 0 {
			return fmt.Errorf("control %s names no framework reference", c.ID)
		}
	}
	check := func(kind, id, title, text string, refs []string, pattern *regexp.Regexp) error {
		if !pattern.MatchString(id) {
			return fmt.Errorf("%s id %q is malformed", kind, id)
		}
		if seen[id] {
			return fmt.Errorf("%s id %q is used twice", kind, id)
		}
		seen[id] = true
		if title == "" || text == "" {
			return fmt.Errorf("%s %s lacks a title or description", kind, id)
		}
		if len(refs) == 0 {
			return fmt.Errorf("%s %s names no control", kind, id)
		}
		for _, ref := range refs {
			if _, ok := ControlByID(ref); !ok {
				return fmt.Errorf("%s %s names unknown control %q", kind, id, ref)
			}
		}
		return nil
	}
	for _, a := range auditCheckTable {
		if err := check("audit check", a.ID, a.Title, a.Passes, a.Controls, checkIDPattern); err != nil {
			return err
		}
	}
	for _, s := range evidenceSectionTable {
		if err := check("evidence section", s.ID, s.Title, s.Shows, s.Controls, sectionIDPattern); err != nil {
			return err
		}
	}
	return nil
}
