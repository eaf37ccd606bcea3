package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
	"github.com/mightyetl/leasefence/textfmt"
)

// The access review (`leasectl access`, and the evidence report's
// EVIDENCE-ACCESS-REVIEW section): who holds which leasefence role and which
// privilege granted outside the bundle's roles, as of a database time.

// AccessRole is one leasefence role a login holds.
type AccessRole struct {
	// Role is the leasefence role (durable_job_*).
	Role string `json:"role"`
	// GrantedTo is the role the grant names: the login itself when direct.
	GrantedTo string `json:"granted_to"`
	// Direct is true when the login itself was granted the role.
	Direct bool `json:"direct"`
	// Grantor is the role that granted it ("" when unknown).
	Grantor string `json:"grantor"`
}

// AccessPrivilege is one privilege on a table, view, sequence or column of
// schema durable_jobs granted outside the bundle's roles.
type AccessPrivilege struct {
	// Privilege is the privilege, such as SELECT or "SELECT (column)".
	Privilege string `json:"privilege"`
	// On is the relation, schema-qualified.
	On string `json:"on"`
	// GrantedTo is the role the grant names: the login itself when direct,
	// or PUBLIC.
	GrantedTo string `json:"granted_to"`
}

// AccessLogin is one login and what it holds.
type AccessLogin struct {
	// Login is the login role's name.
	Login string `json:"login"`
	// Superuser is its SUPERUSER attribute.
	Superuser bool `json:"superuser"`
	// BypassRLS is its BYPASSRLS attribute.
	BypassRLS bool `json:"bypassrls"`
	// CreateRole is its CREATEROLE attribute.
	CreateRole bool `json:"createrole"`
	// Roles are the leasefence roles it holds, directly or inherited.
	Roles []AccessRole `json:"leasefence_roles"`
	// Privileges are the schema's privileges it holds by grants outside
	// the bundle's roles.
	Privileges []AccessPrivilege `json:"table_privileges"`
}

// AccessReview is the whole review. Its JSON is what `leasectl access
// --output json` prints.
type AccessReview struct {
	// AsOf is the database time of the review's snapshot, UTC with
	// milliseconds; empty (and left out of the JSON) where the review is
	// part of a report that carries its own time.
	AsOf string `json:"as_of,omitempty"`
	// Logins are every login of the cluster, by name.
	Logins []AccessLogin `json:"logins"`
	// Public is what PUBLIC, so every login, holds in the schema.
	Public []AccessPrivilege `json:"public_table_privileges"`
	// BodyDigest is "sha256:" and the hex SHA-256 of the review's JSON
	// without as_of and body_digest, computed as BodyDigest does: two
	// reviews of the same access have the same digest.
	BodyDigest string `json:"body_digest"`
}

// ReadAccess reads the access review through db, which should be a
// repeatable-read transaction so that every part is of one snapshot. It
// needs only a login: it reads pg_roles, pg_auth_members, pg_class and
// pg_attribute.
func ReadAccess(ctx context.Context, db DB) (AccessReview, error) {
	var asOf time.Time
	if err := db.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&asOf); err != nil {
		return AccessReview{}, err
	}
	review := AccessReview{AsOf: FormatTime(asOf), Logins: []AccessLogin{}, Public: []AccessPrivilege{}}
	rows, _ := db.Query(ctx, `
		SELECT l.rolname::text, l.rolsuper, l.rolbypassrls, l.rolcreaterole
		FROM pg_catalog.pg_roles l WHERE l.rolcanlogin ORDER BY l.rolname`)
	logins, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Login                            string
		Superuser, BypassRLS, CreateRole bool
	}])
	if err != nil {
		return AccessReview{}, err
	}
	index := map[string]int{}
	for _, l := range logins {
		index[l.Login] = len(review.Logins)
		review.Logins = append(review.Logins, AccessLogin{Login: l.Login, Superuser: l.Superuser, BypassRLS: l.BypassRLS,
			CreateRole: l.CreateRole, Roles: []AccessRole{}, Privileges: []AccessPrivilege{}})
	}
	bundleRoles := append(append([]string{}, sqlbundle.RuntimeRoles...), sqlbundle.DefinerOwnerRoles...)
	rows, _ = db.Query(ctx, RoleClosureSQL+`
		SELECT DISTINCT l.rolname::text, r.rolname::text, v.rolname::text, h.via = h.login,
		       COALESCE(g.rolname::text, '')
		FROM held h
		JOIN pg_catalog.pg_roles l ON l.oid = h.login
		JOIN pg_catalog.pg_roles r ON r.oid = h.roleid
		JOIN pg_catalog.pg_roles v ON v.oid = h.via
		LEFT JOIN pg_catalog.pg_roles g ON g.oid = h.grantor
		WHERE r.rolname = ANY ($1::text[])
		ORDER BY 1, 2, 4 DESC, 3, 5`, bundleRoles)
	type held struct {
		Login string
		AccessRole
	}
	holdings, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (held, error) {
		var h held
		err := row.Scan(&h.Login, &h.Role, &h.GrantedTo, &h.Direct, &h.Grantor)
		return h, err
	})
	if err != nil {
		return AccessReview{}, err
	}
	for _, h := range holdings {
		i := index[h.Login]
		review.Logins[i].Roles = append(review.Logins[i].Roles, h.AccessRole)
	}
	// Privileges granted to PUBLIC (login ''), to a login, or to a role a
	// login holds, outside the bundle's own roles.
	rows, _ = db.Query(ctx, RoleClosureSQL+`, `+SchemaGrantsCTE+`
		SELECT DISTINCT COALESCE(l.rolname::text, ''), g.priv, g.relname, COALESCE(r.rolname::text, 'PUBLIC')
		FROM grants g
		LEFT JOIN pg_catalog.pg_roles r ON r.oid = g.grantee
		LEFT JOIN pg_catalog.pg_roles l ON g.grantee <> 0
		     AND (l.oid = g.grantee OR l.oid IN (SELECT h.login FROM held h WHERE h.roleid = g.grantee))
		WHERE g.grantee <> g.relowner AND (g.grantee = 0 OR r.rolname <> ALL ($1::text[]))
		  AND (g.grantee = 0 OR l.rolcanlogin)
		ORDER BY 1, 3, 2, 4`, bundleRoles)
	type granted struct {
		Login string
		AccessPrivilege
	}
	privileges, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (granted, error) {
		var g granted
		err := row.Scan(&g.Login, &g.Privilege, &g.On, &g.GrantedTo)
		return g, err
	})
	if err != nil {
		return AccessReview{}, err
	}
	for _, p := range privileges {
		if p.Login == "" {
			review.Public = append(review.Public, p.AccessPrivilege)
			continue
		}
		i := index[p.Login]
		review.Logins[i].Privileges = append(review.Logins[i].Privileges, p.AccessPrivilege)
	}
	review.BodyDigest = review.digest()
	return review, nil
}

// digest is the review's body digest: its JSON without as_of and
// body_digest, canonical as BodyDigest makes it. The review holds strings
// and booleans only, which always encode.
func (r AccessReview) digest() string {
	r.AsOf, r.BodyDigest = "", ""
	encoded, _ := json.Marshal(r)
	digest, _ := BodyDigest(encoded)
	return digest
}

// TxBeginner is what ReviewAccess reads through: a *pgxpool.Pool or a
// *pgx.Conn.
type TxBeginner interface {
	// BeginTx starts a transaction, as pgx's BeginTx does.
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// ReviewAccess reads the access review (ReadAccess) in one read-only
// repeatable-read transaction of db, so that every part is of one
// snapshot, and rolls it back.
func ReviewAccess(ctx context.Context, db TxBeginner) (AccessReview, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return AccessReview{}, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return ReadAccess(ctx, tx)
}

// Attributes names the elevated attributes the login holds, of SUPERUSER,
// BYPASSRLS and CREATEROLE, in that order.
func (l AccessLogin) Attributes() []string {
	var attrs []string
	for _, a := range []struct {
		on   bool
		name string
	}{{l.Superuser, "SUPERUSER"}, {l.BypassRLS, "BYPASSRLS"}, {l.CreateRole, "CREATEROLE"}} {
		if a.on {
			attrs = append(attrs, a.name)
		}
	}
	return attrs
}

// Text is the review as leasectl access prints it: its time and digest, a
// table of every login with its elevated attributes and each leasefence
// role it holds (dashes for none), and a table of the privileges granted
// outside the bundle's roles, PUBLIC's first (dashes for none). Every name
// is shown through textfmt.Visible.
func (r AccessReview) Text() string {
	var b strings.Builder
	_, _ = textfmt.Fprintf(&b, "access review as of %s (database time), body digest %s\n", r.AsOf, r.BodyDigest)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	_, _ = textfmt.Fprintf(tw, "LOGIN\tATTRIBUTES\tLEASEFENCE ROLE\tGRANTED TO\tGRANTOR\n")
	for _, l := range r.Logins {
		attributes := cmp.Or(strings.Join(l.Attributes(), ","), "-")
		if len(l.Roles) == 0 {
			_, _ = textfmt.Fprintf(tw, "%s\t%s\t-\t-\t-\n", l.Login, attributes)
		}
		for _, role := range l.Roles {
			_, _ = textfmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Login, attributes, role.Role, role.GrantedTo, role.Grantor)
		}
	}
	_ = tw.Flush()
	b.WriteString("\nprivileges in schema durable_jobs granted outside the bundle's roles:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	_, _ = textfmt.Fprintf(tw, "LOGIN\tPRIVILEGE\tON\tGRANTED TO\n")
	rows := 0
	for _, l := range append([]AccessLogin{{Login: "PUBLIC", Privileges: r.Public}}, r.Logins...) {
		for _, p := range l.Privileges {
			_, _ = textfmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Login, p.Privilege, p.On, p.GrantedTo)
			rows++
		}
	}
	if rows == 0 {
		_, _ = textfmt.Fprintf(tw, "-\t-\t-\t-\n")
	}
	_ = tw.Flush()
	return b.String()
}
