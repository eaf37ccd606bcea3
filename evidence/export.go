package evidence

import (
	"errors"
	"os"
)

// SignatureNamespace is the SSH signature namespace of signed evidence
// exports (`leasectl evidence --sign-key`): a signature made for another
// purpose (a git commit, a file) does not verify as one.
const SignatureNamespace = "leasefence-evidence"

// WriteExport writes an exported report (its Markdown or JSON) to path,
// which must not exist yet, with mode 600: the report names logins, as
// the export of `leasectl migrate down --evidence-export` does.
func WriteExport(path string, body []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	return errors.Join(err, f.Sync(), f.Close())
}
