package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// wrapperFunctions are the bare single-renewal UPDATE (rawRenewSQL) put in
// PL/pgSQL functions of the shapes the contract's functions have, to show
// what the shape alone costs: the body is the baseline's one statement,
// nothing else.
var wrapperFunctions = []struct{ name, attributes, what string }{
	{"bench_wrapped_plain", "", "a plain PL/pgSQL function"},
	{"bench_wrapped_definer", "SECURITY DEFINER", "a SECURITY DEFINER PL/pgSQL function"},
	{"bench_wrapped_pinned", "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
		"a SECURITY DEFINER PL/pgSQL function with SET search_path (the contract's shape)"},
}

// wrapper compares the bare UPDATE with the same UPDATE inside each
// wrapper function, one client, so the fixed cost of a function call of
// the contract's shape is measured apart from what the function does.
func (r *runner) wrapper(ctx context.Context) error {
	body := strings.NewReplacer("bench_raw_renew", "public.bench_raw_renew", "$1", "p_id", "$2::uuid", "p_token",
		"$3", "p_owner", "clock_timestamp()", "pg_catalog.clock_timestamp()").Replace(rawRenewSQL)
	for _, f := range wrapperFunctions {
		// Every name here is a constant of this file.
		if _, err := r.e.admin.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION public.%s(p_id bigint, p_token uuid, p_owner text)
			RETURNS timestamptz LANGUAGE plpgsql %s AS $body$
			DECLARE v_expiry timestamptz;
			BEGIN
				%s INTO v_expiry;
				RETURN v_expiry;
			END $body$`, f.name, f.attributes, body)); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if _, err := r.e.admin.Exec(ctx, `GRANT EXECUTE ON FUNCTION public.`+f.name+`(bigint, uuid, text) TO `+
			pgx.Identifier{r.e.workerRole}.Sanitize()); err != nil {
			return err
		}
	}
	set := r.renewSet
	renew := func(sql string) load {
		return load{pool: r.e.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, iter int) (int, error) {
			i := iter % renewClaims
			var expiry *time.Time
			if err := c.QueryRow(ctx, sql, set.ids[i], set.tokens[i], benchOwner).Scan(&expiry); err != nil {
				return 0, err
			}
			if expiry == nil {
				return 0, fmt.Errorf("the wrapped UPDATE renewed nothing for job %d", set.ids[i])
			}
			return 1, nil
		}}
	}
	for _, f := range wrapperFunctions {
		if err := r.compare(ctx, Comparison{Group: "wrapper", Name: "the bare UPDATE inside " + f.what,
			Ours: f.name, Baseline: "the bare conditional UPDATE", Unit: "renewal"},
			renew(`SELECT public.`+f.name+`($1, $2, $3)`), renew(rawRenewSQL)); err != nil {
			return err
		}
	}
	return nil
}
