package campaign

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgErrCode returns err's SQLSTATE, or "" when it is not a server error.
func pgErrCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
