package sqlbundle

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The rule's own cases; sql/integration's
// TestChangeReasonRuleAgreesWithTheDatabase holds it to the database's.
func TestCheckChangeReason(t *testing.T) {
	require.True(t, passesLuhn("4111111111111111"))
	require.False(t, passesLuhn("4111111111111112"))
	require.False(t, passesLuhn("123"))
	require.True(t, LooksPersonalOrSecret("card 4111 1111 1111 1111"))
	require.True(t, LooksPersonalOrSecret("mail kim@example.com"))
	require.True(t, LooksPersonalOrSecret("call 010-1234-5678"))
	require.True(t, LooksPersonalOrSecret("call +82 10 1234 5678"))
	require.True(t, LooksPersonalOrSecret("call ０１０-１２３４-５６７８"))
	require.False(t, LooksPersonalOrSecret("OPS-1234: raise the lease"))
	require.NoError(t, CheckChangeReason("OPS-1: fine"))
	for _, reason := range []string{"a\x1bb", "a\u2066b", "a\u061cb", "a\u200bb", strings.Repeat("x", 501), " ", "\xff"} {
		require.ErrorContains(t, CheckChangeReason(reason), "without control or bidirectional-control characters", "%+q", reason)
	}
	require.EqualError(t, CheckChangeReason("password: x"), ReasonLooksPersonal)
}
