package goclient

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// ruleEdgeCases are names at the edges of the queue-name and owner-id
// patterns: lengths at and past the bounds, every kind of first character,
// the punctuation each pattern allows or not, a trailing newline (which a
// regexp's $ may or may not accept before it), non-ASCII look-alikes.
func ruleEdgeCases() []string {
	cases := []string{
		"", "a", "A", "0", "9", "z9", "Z9", "-a", "a-", ".a", "a.", ":a", "a:", "_a", "a_", "a.b:c_d-e",
		"Worker-1.host:42", "a b", "a/b", "a*", "*", "a\n", "\na", "a\tb", "é", "aé", "ａ", "\u212a", "ſ",
		"a\u200eb", strings.Repeat("a", 62), strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("A", 127), strings.Repeat("A", 128), strings.Repeat("A", 129),
	}
	// And random names over an alphabet of the characters that matter.
	alphabet := []rune("aZ09._:-/ *é\nK")
	r := rand.New(rand.NewPCG(20261204, 16))
	for range 2000 {
		n := r.IntN(131)
		b := make([]rune, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	return cases
}

// The Go copy of the owner-id rule is the database's: ownerPattern is the
// text worker_owner_id_pattern() returns, and it accepts exactly the names
// worker_owner_id_is_well_formed accepts (differential, over the edge
// cases and 2,000 random names). The queue-name pattern that the Go
// comments and the owner-id pattern that the Config error quote are the
// database's too, and so is the reason-code pattern RetryError's comment
// quotes.
func TestGoCopiesOfTheRulesEqualTheDatabaseRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t).Pool(t) // the installer: it may execute the rule functions

	var ownerSQL, queueSQL, reasonSQL string
	require.NoError(t, pool.QueryRow(ctx, `SELECT durable_jobs.worker_owner_id_pattern(), durable_jobs.queue_name_pattern(),
		durable_jobs.failure_reason_code_pattern()`).Scan(&ownerSQL, &queueSQL, &reasonSQL))
	require.Equal(t, ownerSQL, ownerPattern.String(), "ownerPattern is worker_owner_id_pattern()")
	require.Contains(t, msgOwnerIDFormat, ownerSQL, "the Config error quotes the database's pattern")

	cases := ruleEdgeCases()
	rows, err := pool.Query(ctx, `SELECT durable_jobs.worker_owner_id_is_well_formed(c)
		FROM unnest($1::text[]) WITH ORDINALITY AS u(c, n) ORDER BY n`, cases)
	require.NoError(t, err)
	var sqlSays []bool
	for rows.Next() {
		var ok bool
		require.NoError(t, rows.Scan(&ok))
		sqlSays = append(sqlSays, ok)
	}
	require.NoError(t, rows.Err())
	require.Len(t, sqlSays, len(cases))
	accepted := 0
	for i, c := range cases {
		require.Equal(t, sqlSays[i], ownerPattern.MatchString(c), "owner id %q: database and Go disagree", c)
		if sqlSays[i] {
			accepted++
		}
	}
	require.Greater(t, accepted, 5, "the cases include names the rule accepts")
	require.Less(t, accepted, len(cases)-5, "and names it refuses")

	// The queue-name pattern appears in Go only in comments that tell
	// callers the rule; they must quote the database's.
	for _, file := range []string{"jobs.go", "prommetrics/database.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Contains(t, string(src), queueSQL, "%s quotes queue_name_pattern()", file)
	}
	// So does the reason code's, in the comment of RetryError.
	src, err := os.ReadFile("errors.go")
	require.NoError(t, err)
	require.Contains(t, string(src), reasonSQL, "errors.go quotes failure_reason_code_pattern()")
}
