package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// The checks of the evidence-chain migration (evidence an auditor can rely on):
// AUDIT-POLICY-MATCHES-EVIDENCE, AUDIT-EVIDENCE-CHAIN and AUDIT-ACCESS-REVIEW.

// genesisHash is what the first evidence record chains to.
var genesisHash = make([]byte, sha256.Size)

// chainTriggers are the triggers of the evidence-chain migration that make evidence
// complete and chained: table, trigger name.
var chainTriggers = [][2]string{
	{"control_evidence_record", "control_evidence_record_chain"},
	{"queue_lease_policy", "queue_lease_policy_stamp"},
	{"queue_lease_policy", "queue_lease_policy_evidence"},
	{"queue_lease_policy", "queue_lease_policy_no_truncate"},
}

// auditorFunctionFinding says whether this login can execute
// durable_jobs.<name>() (it exists, with EXECUTE and USAGE); when it exists
// but is not callable, the finding says why the check cannot tell (a
// missing function is no finding here: the version checks report the older
// bundle).
func auditorFunctionFinding(ctx context.Context, pool DB, name string) (callable bool, finding string, err error) {
	var exists bool
	err = pool.QueryRow(ctx, `
		SELECT p.oid IS NOT NULL,
		       COALESCE(pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
		                AND pg_catalog.has_schema_privilege(p.pronamespace, 'USAGE'), false)
		FROM (SELECT 1) one
		LEFT JOIN pg_catalog.pg_proc p ON p.proname = $1
		     AND p.pronamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'durable_jobs')`,
		name).Scan(&exists, &callable)
	switch {
	case err != nil:
		return false, "", err
	case !exists:
		return false, "", nil // an older or missing bundle: AUDIT-MIGRATION-VERSION and AUDIT-FUNCTION-DRIFT say so
	case !callable:
		return false, fmt.Sprintf("cannot tell: this login cannot execute durable_jobs.%s(); grant it durable_job_auditor", name), nil
	}
	return true, "", nil
}

// checkPolicyEvidence: every queue's live policy equals what its last
// lease_policy_changed record says (policy_evidence_mismatches), so no
// policy was changed without evidence, for example by a superuser with
// triggers off.
func checkPolicyEvidence(ctx context.Context, pool DB) ([]string, error) {
	callable, finding, err := auditorFunctionFinding(ctx, pool, "policy_evidence_mismatches")
	if err != nil || !callable {
		return optionalFinding(finding), err
	}
	return collectStrings(ctx, pool, `
		SELECT 'queue ' || pg_catalog.quote_literal(m.queue_name) || ': ' || m.mismatch
		FROM durable_jobs.policy_evidence_mismatches() m ORDER BY m.queue_name`)
}

// chainLink is one row of control_evidence_chain().
type chainLink struct {
	ID                 int64
	Kind               string
	ContentDigest      []byte
	PreviousRecordHash []byte
	RecordHash         []byte
}

// checkEvidenceChain: the chain and policy triggers are in force, and
// every record's hash is sha256(previous hash || content digest) and links
// to the record before it. Verified here, not by the database: the
// database only supplies each record's content digest as stored now.
func checkEvidenceChain(ctx context.Context, pool DB) ([]string, error) {
	callable, finding, err := auditorFunctionFinding(ctx, pool, "control_evidence_chain")
	if err != nil || !callable {
		return optionalFinding(finding), err
	}
	findings, err := triggerFindings(ctx, pool, chainTriggers)
	if err != nil {
		return nil, err
	}
	rows, _ := pool.Query(ctx, `
		SELECT evidence_record_id, evidence_kind, content_digest, previous_record_hash, record_hash
		FROM durable_jobs.control_evidence_chain()`)
	links, err := pgx.CollectRows(rows, pgx.RowToStructByPos[chainLink])
	if err != nil {
		return nil, err
	}
	return append(findings, verifyChain(links)...), nil
}

// verifyChain returns a finding for every record whose hash does not cover
// its content and previous hash (altered) and for every record that does
// not link to the record before it (a record deleted or moved).
func verifyChain(links []chainLink) []string {
	var findings []string
	previous := genesisHash
	previousID := int64(0)
	for _, l := range links {
		if !bytes.Equal(l.PreviousRecordHash, previous) {
			if previousID == 0 {
				findings = append(findings, fmt.Sprintf("record %d (%s) is the first but does not chain to the genesis hash: records before it were deleted", l.ID, l.Kind))
			} else {
				findings = append(findings, fmt.Sprintf("record %d (%s) does not link to record %d before it: a record between them was deleted or the records were reordered", l.ID, l.Kind, previousID))
			}
		}
		sum := sha256.Sum256(append(append([]byte{}, l.PreviousRecordHash...), l.ContentDigest...))
		if !bytes.Equal(sum[:], l.RecordHash) {
			findings = append(findings, fmt.Sprintf("record %d (%s): its content or previous hash no longer matches its record hash: the record was altered", l.ID, l.Kind))
		}
		previous, previousID = l.RecordHash, l.ID
	}
	return findings
}

// sodAccepted is how a login's role comment accepts holding both a worker
// and an operator role: the ticket that approved it.
var sodAccepted = regexp.MustCompile(`leasefence: separation of duties accepted: [A-Z][A-Z0-9]+-[0-9]+`)

// RoleClosureSQL lists, for every login, each role it holds through
// pg_auth_members, directly or through other roles: login, role, grantor,
// the role it was granted to (the login itself when direct). It is a WITH
// clause that defines the relation held(login, roleid, grantor, via, path):
// append the SELECT that reads it. AUDIT-ACCESS-REVIEW uses it, and so does
// leasectl access to list every login's roles.
const RoleClosureSQL = `
	WITH RECURSIVE held AS (
		SELECT m.member AS login, m.roleid, m.grantor, m.member AS via, ARRAY[m.member, m.roleid] AS path
		FROM pg_catalog.pg_auth_members m
		JOIN pg_catalog.pg_roles l ON l.oid = m.member AND l.rolcanlogin
		UNION ALL
		SELECT h.login, m.roleid, m.grantor, m.member, h.path || m.roleid
		FROM held h JOIN pg_catalog.pg_auth_members m ON m.member = h.roleid
		WHERE m.roleid <> ALL (h.path)
	)`

// SchemaGrantsCTE defines, for a WITH clause, grants(relname, grantee,
// priv, relowner): every privilege granted on a table, view, sequence or
// column of schema durable_jobs (relname schema-qualified, grantee 0 for
// PUBLIC, priv "SELECT" or "SELECT (column)"). It starts with no WITH, so
// it can follow RoleClosureSQL after a comma. AUDIT-ACCESS-REVIEW reads it,
// and so does leasectl access to list who holds what.
const SchemaGrantsCTE = `
	rels AS (
		SELECT c.oid, c.relowner, c.relacl, pg_catalog.format('%I.%I', n.nspname, c.relname) AS relname
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'durable_jobs' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
	), grants AS (
		SELECT rel.relname, x.grantee, x.privilege_type AS priv, rel.relowner
		FROM rels rel CROSS JOIN LATERAL pg_catalog.aclexplode(rel.relacl) x
		UNION ALL
		SELECT rel.relname, x.grantee, pg_catalog.format('%s (%I)', x.privilege_type, a.attname), rel.relowner
		FROM rels rel
		JOIN pg_catalog.pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
		CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) x
	)`

// checkAccessReview: no role outside the bundle (a login, a group logins
// hold, or PUBLIC) holds a table, column or sequence privilege in the
// schema by grant (superusers bypass grants and are listed by leasectl
// access; the runtime roles are AUDIT-RUNTIME-TABLE-PRIVILEGES' and the
// definer owners' privileges are the bundle's own); no login holds a
// definer owner role, directly or inherited; no login holds both the worker
// and the operator role unless its role comment accepts it.
func checkAccessReview(ctx context.Context, pool DB) ([]string, error) {
	bundleRoles := append(append([]string{}, sqlbundle.RuntimeRoles...), sqlbundle.DefinerOwnerRoles...)
	findings, err := collectStrings(ctx, pool, `WITH `+SchemaGrantsCTE+`
		SELECT CASE WHEN g.grantee = 0 THEN 'PUBLIC'
		            WHEN r.rolcanlogin THEN 'login ' || pg_catalog.quote_ident(r.rolname)
		            ELSE 'role ' || pg_catalog.quote_ident(r.rolname) END
		       || ' holds ' || pg_catalog.string_agg(DISTINCT g.priv, ', ') || ' on ' || g.relname
		FROM grants g LEFT JOIN pg_catalog.pg_roles r ON r.oid = g.grantee
		WHERE g.grantee <> g.relowner AND (g.grantee = 0 OR r.rolname <> ALL ($1::text[]))
		GROUP BY g.grantee, r.rolcanlogin, r.rolname, g.relname
		ORDER BY 1`, bundleRoles)
	if err != nil {
		return nil, err
	}
	type holding struct {
		Login, Role, Comment string
	}
	rows, _ := pool.Query(ctx, RoleClosureSQL+`
		SELECT DISTINCT l.rolname::text, r.rolname::text, COALESCE(pg_catalog.shobj_description(l.oid, 'pg_authid'), '')
		FROM held h
		JOIN pg_catalog.pg_roles l ON l.oid = h.login
		JOIN pg_catalog.pg_roles r ON r.oid = h.roleid
		WHERE r.rolname = ANY ($1::text[])
		ORDER BY 1, 2`, bundleRoles)
	holdings, err := pgx.CollectRows(rows, pgx.RowToStructByPos[holding])
	if err != nil {
		return nil, err
	}
	definer := map[string]bool{}
	for _, r := range sqlbundle.DefinerOwnerRoles {
		definer[r] = true
	}
	worker, operator, comment := map[string]bool{}, map[string]bool{}, map[string]string{}
	var logins []string
	for _, h := range holdings {
		if definer[h.Role] {
			findings = append(findings, fmt.Sprintf("login %s holds definer owner role %s: it can write that family's tables directly", h.Login, h.Role))
		}
		if _, seen := comment[h.Login]; !seen {
			logins = append(logins, h.Login)
		}
		comment[h.Login] = h.Comment
		worker[h.Login] = worker[h.Login] || h.Role == "durable_job_worker"
		operator[h.Login] = operator[h.Login] || h.Role == "durable_job_operator"
	}
	for _, login := range logins {
		if worker[login] && operator[login] && !sodAccepted.MatchString(comment[login]) {
			findings = append(findings, fmt.Sprintf("login %s holds both durable_job_worker and durable_job_operator (separation of duties); "+
				"if accepted, record it: COMMENT ON ROLE %s IS 'leasefence: separation of duties accepted: <TICKET-1>'", login, login))
		}
	}
	return findings, nil
}
