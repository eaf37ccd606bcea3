package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// On a standby, health's server line says that it is one, with no
// timeline (a real standby: audit's standby tests; the rest of the line:
// cmd/leasectl's TestHealthShowsFailoverReclaimsAndTheServer).
func TestServerLineOfAStandby(t *testing.T) {
	t.Parallel()
	require.Equal(t, "server: a standby (in recovery), started at 2026-01-02T03:04:05.000Z",
		serverLine(goclient.ServerAvailability{InRecovery: true, StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}))
}
