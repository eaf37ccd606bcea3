package textfmt

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDurationLeavesOutZeroUnits(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		3 * time.Second: "3s", time.Minute: "1m", 90 * time.Second: "1m30s", 24 * time.Hour: "24h",
		90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", 200 * time.Millisecond: "200ms",
	} {
		require.Equal(t, want, Duration(d), d)
	}
}

func TestDaysPrintsWholeDaysAndParseDaysReadsThemBack(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		30 * 24 * time.Hour: "30d", 36 * time.Hour: "36h", 90 * time.Minute: "1h30m", 0: "0s", -24 * time.Hour: "-24h",
	} {
		require.Equal(t, want, Days(d), d)
		back, err := ParseDays(want)
		require.NoError(t, err, want)
		require.Equal(t, d, back, want)
	}
	for _, bad := range []string{"3x", "d", "1.5d", "99999999999d", ""} {
		_, err := ParseDays(bad)
		require.EqualError(t, err, `invalid duration "`+bad+`" (write whole days like 30d, or 12h, 90m)`, bad)
	}
}

func TestTimeIsUTCWithMilliseconds(t *testing.T) {
	t.Parallel()
	seoul := time.FixedZone("KST", 9*3600)
	require.Equal(t, "2026-05-01T03:04:05.678Z", Time(time.Date(2026, 5, 1, 12, 4, 5, 678_900_000, seoul)))
}

func TestVisibleAndOneLineShowControlBidiAndBadBytesAsEscapes(t *testing.T) {
	t.Parallel()
	require.Equal(t, `a\u000a  b \u001b[2J \u202eevil\u2028 \xff ok`, Visible("a\n  b \x1b[2J \u202eevil\u2028 \xff ok"))
	require.Equal(t, `a b \u001b[2J \u202eevil \xff`, OneLine("a\n  b \x1b[2J \u202eevil \xff"))
}

func TestCompactJSONPrintsOneLineOrTheTextAsItIs(t *testing.T) {
	t.Parallel()
	require.Equal(t, `{"a":1,"b":[2,3]}`, CompactJSON(json.RawMessage("{\"a\": 1,\n \"b\": [2, 3]}")))
	require.Equal(t, "not json", CompactJSON(json.RawMessage("not json")))
}

func TestFprintfShowsEveryTextArgumentThroughVisible(t *testing.T) {
	t.Parallel()
	type status string
	var b strings.Builder
	n, err := Fprintf(&b, "%s|%v|%q|%d|%s|%v\n", "a\nb\x1b[2J", []string{"c\rd", "ok"}, "e\u202ef", 7, status("g\nh"), nil)
	require.NoError(t, err)
	require.Equal(t, b.Len(), n)
	require.Equal(t, `a\u000ab\u001b[2J|[c\u000dd ok]|"e\\u202ef"|7|g\u000ah|<nil>`+"\n", b.String())
	// Text escaped before is left as it is.
	require.Equal(t, Visible("a\nb"), Visible(Visible("a\nb")))
}
