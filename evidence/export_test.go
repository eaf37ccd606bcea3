package evidence

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// An export is written once, to a new file readable by its owner alone.
func TestWriteExportWritesANewFileOnlyItsOwnerReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "evidence.json")
	body := []byte(`{"schema_version": 3}` + "\n")
	require.NoError(t, WriteExport(path, body))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "it names logins")
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, body, written)
	require.ErrorIs(t, WriteExport(path, []byte("other")), os.ErrExist, "never overwritten")
	written, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, body, written)
	require.Error(t, WriteExport(filepath.Join(dir, "missing", "evidence.json"), body))
}
