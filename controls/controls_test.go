package controls

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTablesAreConsistent(t *testing.T) {
	require.NoError(t, Validate())
	require.NotEmpty(t, Controls())
	require.Len(t, AuditChecks(), 27)
	require.NotEmpty(t, EvidenceSections())
}

func TestLookupsFindEveryIdentifierAndRejectUnknownOnes(t *testing.T) {
	for _, c := range Controls() {
		got, ok := ControlByID(c.ID)
		require.True(t, ok, c.ID)
		require.Equal(t, c.Title, got.Title)
	}
	for _, a := range AuditChecks() {
		got, ok := AuditCheckByID(a.ID)
		require.True(t, ok, a.ID)
		require.Equal(t, a.Title, got.Title)
	}
	for _, s := range EvidenceSections() {
		got, ok := EvidenceSectionByID(s.ID)
		require.True(t, ok, s.ID)
		require.Equal(t, s.Title, got.Title)
	}
	_, ok := ControlByID("LF-NOPE-99")
	require.False(t, ok)
	_, ok = AuditCheckByID("AUDIT-NOPE")
	require.False(t, ok)
	_, ok = EvidenceSectionByID("EVIDENCE-NOPE")
	require.False(t, ok)
}

func TestCopiesDoNotChangeTheTable(t *testing.T) {
	c := Controls()
	c[0].TrustServicesCriteria[0] = "changed"
	c[0].Title = "changed"
	require.NotEqual(t, "changed", Controls()[0].TrustServicesCriteria[0])
	require.NotEqual(t, "changed", Controls()[0].Title)
	a := AuditChecks()
	a[0].Controls[0] = "changed"
	require.NotEqual(t, "changed", AuditChecks()[0].Controls[0])
	s := EvidenceSections()
	s[0].Controls[0] = "changed"
	require.NotEqual(t, "changed", EvidenceSections()[0].Controls[0])
}

func TestEveryAuditCheckAndSectionIsNamedByConstant(t *testing.T) {
	checks := []string{CheckSearchPath, CheckPublicExecute, CheckRuntimePrivileges, CheckDefinerAttributes,
		CheckRenewalPayload, CheckSchemaCreate, CheckEvidenceAppendOnly, CheckMigrationVersion,
		CheckObjectDependencies, CheckDefinerOwners, CheckEvidenceTrigger, CheckFunctionDrift,
		CheckServerLogSecrets, CheckUnencryptedSessions, CheckTLSConfiguration, CheckLoginTimeouts,
		CheckPolicyEvidence, CheckControlEvidence, CheckJobStatuses, CheckEvidenceChain, CheckEvidenceAnchor,
		CheckAccessReview, CheckRoleChangeLogging, CheckGenerationFloor, CheckServerIsPrimary, CheckSecondPrimary,
		CheckSynchronousReplication}
	require.Len(t, AuditChecks(), len(checks))
	for i, a := range AuditChecks() {
		require.Equal(t, checks[i], a.ID)
	}
	for _, s := range EvidenceSections() {
		require.True(t, strings.HasPrefix(s.ID, "EVIDENCE-"))
	}
}

// TestValidateRejectsBrokenTables swaps the package tables for broken ones,
// so it must not run in parallel with the other tests of this package.
func TestValidateRejectsBrokenTables(t *testing.T) {
	origControls, origChecks, origSections := controlTable, auditCheckTable, evidenceSectionTable
	t.Cleanup(func() { controlTable, auditCheckTable, evidenceSectionTable = origControls, origChecks, origSections })
	good := Control{"LF-TST-01", "t", "o", []string{"CC1.1"}, []string{"a"}}
	goodCheck := AuditCheck{"AUDIT-TEST", "t", "p", []string{"LF-TST-01"}}
	cases := []struct {
		name     string
		controls []Control
		checks   []AuditCheck
		sections []EvidenceSection
		want     string
	}{
		{"bad control id", []Control{{ID: "LF-1"}}, nil, nil, "not of the form"},
		{"duplicate control", []Control{good, good}, nil, nil, "used twice"},
		{"no title", []Control{{ID: "LF-TST-01"}}, nil, nil, "lacks a title"},
		{"no framework", []Control{{ID: "LF-TST-01", Title: "t", Objective: "o"}}, nil, nil, "no framework"},
		{"bad check id", []Control{good}, []AuditCheck{{ID: "audit-x"}}, nil, "malformed"},
		{"duplicate check", []Control{good}, []AuditCheck{goodCheck, goodCheck}, nil, "used twice"},
		{"check no title", []Control{good}, []AuditCheck{{ID: "AUDIT-X"}}, nil, "lacks a title"},
		{"check no control", []Control{good}, []AuditCheck{{ID: "AUDIT-X", Title: "t", Passes: "p"}}, nil, "names no control"},
		{"check unknown control", []Control{good}, []AuditCheck{{"AUDIT-X", "t", "p", []string{"LF-ZZZ-01"}}}, nil, "unknown control"},
		{"section unknown control", []Control{good}, nil, []EvidenceSection{{"EVIDENCE-X", "t", "s", []string{"LF-ZZZ-01"}}}, "unknown control"},
	}
	for _, tc := range cases {
		controlTable, auditCheckTable, evidenceSectionTable = tc.controls, tc.checks, tc.sections
		err := Validate()
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
	controlTable, auditCheckTable, evidenceSectionTable = []Control{good}, []AuditCheck{goodCheck}, nil
	require.NoError(t, Validate())
}
