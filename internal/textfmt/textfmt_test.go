package textfmt

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/textfmt"
)

func TestEachFunctionIsThePublicPackages(t *testing.T) {
	t.Parallel()
	require.Equal(t, textfmt.Duration(90*time.Second), Duration(90*time.Second))
	at := time.Date(2026, 5, 1, 12, 4, 5, 678_900_000, time.UTC)
	require.Equal(t, textfmt.Time(at), Time(at))
	require.Equal(t, textfmt.Visible("a\u202eb"), Visible("a\u202eb"))
	require.Equal(t, textfmt.OneLine("a\n b"), OneLine("a\n b"))
	require.Equal(t, textfmt.CompactJSON(json.RawMessage(`{ "a": 1 }`)), CompactJSON(json.RawMessage(`{ "a": 1 }`)))
	var b bytes.Buffer
	_, err := Fprintf(&b, "%s", "a\x1bb")
	require.NoError(t, err)
	require.Equal(t, `a\u001bb`, b.String())
}
