package audit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The checks of failover (issue 20, migration 011): AUDIT-GENERATION-FLOOR,
// AUDIT-SECOND-PRIMARY and AUDIT-SYNCHRONOUS-REPLICATION.

// Option changes what Run checks beyond the database it is given.
type Option func(*options)

// options are what the Options of one Run set.
type options struct {
	hosts  []*pgx.ConnConfig
	anchor *Anchor
	// requireRoleLogging makes AUDIT-ROLE-CHANGE-LOGGING's problem a
	// finding (RequireRoleChangeLogging).
	requireRoleLogging bool
	// warnings collects the warnings of the check running now (see warn).
	warnings []string
}

// warn adds a warning to the check running now: reported, never failing
// the check or the audit.
func (o *options) warn(warning string) { o.warnings = append(o.warnings, warning) }

// WithHosts gives Run the hosts of the connection URL, one connection
// configuration each (HostConfigs makes them from a multi-host URL's
// configuration). AUDIT-SECOND-PRIMARY connects to each, skips the server
// the audit runs against, and reports any other that is a primary of the
// same cluster. Without it, AUDIT-SECOND-PRIMARY has nothing to compare
// and passes.
func WithHosts(hosts ...*pgx.ConnConfig) Option {
	return func(o *options) { o.hosts = append(o.hosts, hosts...) }
}

// HostConfigs splits a connection configuration with several hosts (a
// multi-host URL such as host=a,b or postgres://u@a:5432,b:5433/db) into
// one configuration per host, in the URL's order, each with that host's
// address and TLS settings, no fallbacks and no target_session_attrs check,
// so that it connects to a standby as readily as to a primary.
func HostConfigs(cfg *pgx.ConnConfig) []*pgx.ConnConfig {
	hosts := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	out := make([]*pgx.ConnConfig, 0, len(hosts))
	for _, h := range hosts {
		c := cfg.Copy()
		c.Host, c.Port, c.TLSConfig = h.Host, h.Port, h.TLSConfig
		c.Fallbacks = nil
		c.ValidateConnect = nil
		out = append(out, c)
	}
	return out
}

// generationFloorTrigger is the trigger migration 011 creates (and 017
// drops), as pg_get_triggerdef prints it.
const generationFloorTrigger = "CREATE TRIGGER job_record_generation_floor BEFORE UPDATE OF lease_fencing_generation " +
	"ON durable_jobs.job_record FOR EACH ROW WHEN ((new.lease_fencing_generation > old.lease_fencing_generation)) " +
	"EXECUTE FUNCTION durable_jobs.raise_generation_to_floor()"

// The bundle versions of the generation floor: 011 put it in a trigger,
// 017 moved it into claim_next_jobs and dropped the trigger.
const (
	generationFloorTriggerVersion = 11
	generationFloorClaimVersion   = 17
)

// generationFloorClaim are the statements of claim_next_jobs (sql/functions/claim.sql,
// since migration 017) that raise a claim's generation to the WAL timeline's
// floor, whitespace collapsed to single spaces.
var generationFloorClaim = []string{
	"v_floor := COALESCE(v_floor, ((('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40) + 1);",
	"lease_fencing_generation = GREATEST(j.lease_fencing_generation + 1, v_floor),",
}

// checkGenerationFloor: claims raise the fencing generation to the WAL
// timeline's floor, so a generation issued after a promotion is above
// every generation an earlier primary issued. Where the floor lives
// depends on the bundle version the database records:
//
//   - 11 to 16: in the trigger job_record_generation_floor, which must
//     exist, fire in every session and be defined exactly as migration 011
//     defines it. Nothing is reported when its function
//     raise_generation_to_floor does not exist (AUDIT-FUNCTION-DRIFT
//     reports the dropped function).
//   - 17 and later: in claim_next_jobs itself (017 dropped the trigger,
//     which made PostgreSQL lock the old row before every UPDATE of
//     job_record). AUDIT-FUNCTION-DRIFT already reports any change to
//     claim_next_jobs, and a trigger function put back, as drift; this
//     check names the one change that breaks fencing across promotions:
//     an installed claim_next_jobs whose source no longer computes the
//     floor or no longer claims with GREATEST(generation + 1, floor). A
//     missing claim_next_jobs is left to AUDIT-FUNCTION-DRIFT.
//   - below 11, or a version the login cannot read: nothing (no floor yet;
//     AUDIT-MIGRATION-VERSION reports the version).
func checkGenerationFloor(ctx context.Context, pool DB, _ *options) ([]string, error) {
	version, finding, err := recordedVersion(ctx, pool)
	switch {
	case err != nil || finding != "" || version < generationFloorTriggerVersion:
		return nil, err
	case version >= generationFloorClaimVersion:
		return checkGenerationFloorInClaim(ctx, pool)
	}
	return checkGenerationFloorTrigger(ctx, pool)
}

// checkGenerationFloorInClaim: the installed claim_next_jobs raises the
// generation to the floor (bundle versions 17 and later).
func checkGenerationFloorInClaim(ctx context.Context, pool DB) ([]string, error) {
	var source *string
	// pg_proc, which every login may read; to_regprocedure would need
	// USAGE on the schema.
	err := pool.QueryRow(ctx, `
		SELECT pg_catalog.regexp_replace(p.prosrc, '\s+', ' ', 'g') FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'durable_jobs' AND p.proname = 'claim_next_jobs'
		  AND p.proargtypes = '25 25 23'::pg_catalog.oidvector`).Scan(&source)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	}
	for _, statement := range generationFloorClaim {
		if !strings.Contains(*source, statement) {
			return []string{"function claim_next_jobs does not raise the fencing generation to the WAL timeline's floor: claims after a promotion can reissue generations an earlier primary issued"}, nil
		}
	}
	return nil, nil
}

// checkGenerationFloorTrigger: the generation-floor trigger exists, fires
// in every session, executes raise_generation_to_floor() and is defined
// exactly as migration 011 defines it (bundle versions 11 to 16).
func checkGenerationFloorTrigger(ctx context.Context, pool DB) ([]string, error) {
	var function bool
	var enabled, definition *string
	// Through the catalogs, which every login may read (to_regclass needs
	// USAGE on the schema).
	err := pool.QueryRow(ctx, `
		WITH trigger AS (
			SELECT g.oid, g.tgenabled FROM pg_catalog.pg_trigger g
			JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'durable_jobs' AND c.relname = 'job_record' AND g.tgname = 'job_record_generation_floor')
		SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		               WHERE n.nspname = 'durable_jobs' AND p.proname = 'raise_generation_to_floor' AND p.pronargs = 0),
		       (SELECT tgenabled::text FROM trigger),
		       (SELECT pg_catalog.pg_get_triggerdef(oid) FROM trigger)`).
		Scan(&function, &enabled, &definition)
	switch {
	case err != nil:
		return nil, err
	case !function:
		return nil, nil
	case enabled == nil:
		return []string{"trigger job_record_generation_floor on durable_jobs.job_record is missing: claims after a promotion can reissue generations an earlier primary issued"}, nil
	}
	var findings []string
	if *enabled != "O" && *enabled != "A" {
		findings = append(findings, fmt.Sprintf("trigger job_record_generation_floor on durable_jobs.job_record does not fire in every session (tgenabled %s)", *enabled))
	}
	if *definition != generationFloorTrigger {
		findings = append(findings, "trigger job_record_generation_floor on durable_jobs.job_record differs from what migration 011 creates (timing, columns, condition or function)")
	}
	return findings, nil
}

// serverIdentity is what tells two servers of one cluster apart: the
// cluster's system identifier (shared by a primary and its standbys), the
// start of the postmaster, and whether it is a primary.
type serverIdentity struct {
	SystemIdentifier string
	Started          time.Time
	Primary          bool
	Timeline         *int64
}

// serverIdentitySQL reads a server's identity; the timeline only on a
// primary (pg_walfile_name cannot run during recovery).
const serverIdentitySQL = `
	SELECT s.system_identifier::text, pg_catalog.pg_postmaster_start_time(), NOT pg_catalog.pg_is_in_recovery(),
	       CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL
	            ELSE ('x' OPERATOR(pg_catalog.||) pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint END
	FROM pg_catalog.pg_control_system() s`

// readIdentity reads the identity of the server q talks to.
func readIdentity(ctx context.Context, q DB) (serverIdentity, error) {
	var id serverIdentity
	err := q.QueryRow(ctx, serverIdentitySQL).Scan(&id.SystemIdentifier, &id.Started, &id.Primary, &id.Timeline)
	return id, err
}

// hostTimeout bounds the connection to, and the query of, each other host.
const hostTimeout = 5 * time.Second

// checkSecondPrimary: no host given by WithHosts, other than the audited
// server itself, is a primary with the audited server's system
// identifier. A host that cannot be reached or read is skipped: a stopped
// old primary is what fencing wants.
func checkSecondPrimary(ctx context.Context, pool DB, o *options) ([]string, error) {
	if len(o.hosts) == 0 {
		return nil, nil
	}
	self, err := readIdentity(ctx, pool)
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, h := range o.hosts {
		other, ok := hostIdentity(ctx, h)
		// The same system identifier and postmaster start: the audited
		// server itself, reached through another of its names.
		if !ok || other.SystemIdentifier != self.SystemIdentifier || !other.Primary || other.Started.Equal(self.Started) {
			continue
		}
		findings = append(findings, fmt.Sprintf(
			"host %s is also a primary (timeline %s) of this cluster (system identifier %s), which is a %s on timeline %s: "+
				"two primaries issue fencing generations and accept terminal writes; fence the one that is not the current primary",
			net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))), timelineText(other.Timeline), self.SystemIdentifier,
			map[bool]string{true: "primary", false: "standby"}[self.Primary], timelineText(self.Timeline)))
	}
	return findings, nil
}

// hostIdentity connects to one host and reads its identity; ok is false
// when it cannot.
func hostIdentity(ctx context.Context, cfg *pgx.ConnConfig) (id serverIdentity, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, hostTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return serverIdentity{}, false
	}
	defer conn.Close(context.Background())
	id, err = readIdentity(ctx, conn)
	return id, err == nil
}

// timelineText prints a timeline, "none" for a standby's.
func timelineText(tli *int64) string {
	if tli == nil {
		return "none"
	}
	return strconv.FormatInt(*tli, 10)
}

// checkSynchronousReplication: synchronous_standby_names is set, on a
// primary (a standby's own setting means nothing until it is promoted).
// Its findings are warnings (warningChecks): reported, never failing the
// audit.
func checkSynchronousReplication(ctx context.Context, pool DB, _ *options) ([]string, error) {
	var names string
	var standby bool
	if err := pool.QueryRow(ctx, `SELECT pg_catalog.current_setting('synchronous_standby_names'), pg_catalog.pg_is_in_recovery()`).
		Scan(&names, &standby); err != nil {
		return nil, err
	}
	if names != "" || standby {
		return nil, nil // a standby commits nothing; AUDIT-SERVER-IS-PRIMARY reports it
	}
	return []string{"synchronous_standby_names is empty: commits do not wait for a standby, so a failover can lose " +
		"acknowledged completions (the job runs again) and the runbook requires synchronous replication"}, nil
}

// StandbyFinding is what AUDIT-SERVER-IS-PRIMARY reports about a standby.
const StandbyFinding = "the server is a standby (pg_is_in_recovery() is true): it accepts no writes, and what it shows is " +
	"the primary's state as far as it has replayed; audit the primary (add target_session_attrs=read-write to a multi-host URL)"

// checkServerIsPrimary: the audited server is a primary, not a standby in
// recovery.
func checkServerIsPrimary(ctx context.Context, pool DB, _ *options) ([]string, error) {
	var standby bool
	if err := pool.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery()`).Scan(&standby); err != nil || !standby {
		return nil, err
	}
	return []string{StandbyFinding}, nil
}
