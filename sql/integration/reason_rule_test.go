package sqlintegration

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// reasonVerdict is what a change reason is under the rule: "" (accepted),
// "plain" (not plain text) or "personal" (looks like personal data or a
// secret).
func reasonVerdict(reason string) string {
	var re *sqlbundle.ReasonError
	switch err := sqlbundle.CheckChangeReason(reason); {
	case err == nil:
		return ""
	case errors.As(err, &re) && re.Problem == sqlbundle.ReasonLooksPersonal:
		return "personal"
	}
	return "plain"
}

// Issue 35: the Go copy of the reason rule (which leasectl runs on a
// migration's reason before the bundle may be installed) was tested only
// against itself, and had fallen behind the database's: it let a zero-width
// space, a soft hyphen or a byte order mark through, read no full-width or
// Arabic-Indic digits, and knew neither "pass=" nor "password is". Now the
// same inputs go through CheckChangeReason and through the database's own
// is_plain_change_reason and looks_personal_or_secret (the checks
// require_structured_change makes), and the two must agree on each.
func TestChangeReasonRuleAgreesWithTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t).Pool(t)
	inputs := []string{
		"OPS-1234: raise the lease", "", "   ", strings.Repeat("x", 500), strings.Repeat("x", 501), strings.Repeat("가", 500),
		"a\x1bb", "a\tb", "a\u0085b", "a\u061cb", "a\u200bb", "a\u00adb", "a\ufeffb", "a\U000e0041b", "a\u2066b",
		"a\u3164b", "a\u202eb", "a\u2028b", "a\u034fb", "a\ufe0fb", "a\u180bb", "한국어 사유 CHG-7", "café", "a\u00a0b", "\u00a0", "\u3000",
		"900101-1234567", "900101 1234567", "900101.1234567", "900101_1234567", "9001011234567", "900101-5234567",
		"kim@example.com", "kim＠example．com", "kim@example。com", "call 010-1234-5678", "call (02) 123 4567",
		"call ０１０-１２３４-５６７８", "call 010‐1234‐5678", "call 010−1234−5678", "call ٠١٠١٢٣٤٥٦٧٨", "call ০১০১২৩৪৫৬৭৮",
		"+82 10 1234 5678", "+82 (10) 1234-5678", "+1234567", "password=x", "PWD: x", "api-key=x", "API_KEY:x", "apikey = 1",
		"pass = x", "bypass=x", "the password is hunter2", "passphrase is x", "password  is", "token: abc", "secret=1", "pw=1",
		"card 4111 1111 1111 1111", "card 4111-1111-1111-1112", "card 4111.1111.1111.1111", "card 4111_1111_1111_1111",
		"card ٤١١١١١١١١١١١١١١١", "card ４１１１１１１１１１１１１１１１", "order 12345678901234", "ticket OPS-2026-0001",
		"ﬁ ligature", "Ⅻ roman", "x\u2010y", "x\uff0dy", "10:30 window", "v1.2.3 release", "rollback to 28",
	}
	// And random text from the characters the rules turn on.
	alphabet := []string{"0", "1", "4", "9", " ", "  ", "-", ".", "_", "@", "a", "k", "m", "e", "x", "(", ")", "+", "password",
		"pass", "is", "=", ":", "\u200b", "０", "٤", "\u2010", "\u3002", "＠", "com", "pw", "token", "가", "\u00a0"}
	rng := rand.New(rand.NewPCG(35, 2))
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	rows, _ := pool.Query(ctx, `SELECT CASE WHEN NOT durable_jobs.is_plain_change_reason(t) THEN 'plain'
		WHEN durable_jobs.looks_personal_or_secret(t) THEN 'personal' ELSE '' END
		FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n`, inputs)
	verdicts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, verdicts, len(inputs))
	disagree := 0
	for i, input := range inputs {
		if got := reasonVerdict(input); got != verdicts[i] {
			disagree++
			t.Errorf("%+q: the database says %q, CheckChangeReason %q", input, verdicts[i], got)
		}
	}
	require.Zero(t, disagree, "of %d inputs", len(inputs))
}
