package sshsig

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// sshKeygen runs ssh-keygen, failing the test with how to install it when
// it is missing.
func sshKeygen(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("ssh-keygen")
	require.NoError(t, err, "ssh-keygen is missing: run make deps (apt-get install openssh-client)")
	cmd := exec.Command(path, args...)
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// newKey makes a key of the given type with ssh-keygen, without a
// passphrase unless one is given, and returns the private key's path.
func newKey(t *testing.T, kind, passphrase string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "id_"+kind)
	out, err := sshKeygen(t, nil, "-q", "-t", kind, "-N", passphrase, "-C", "evidence@leasefence.test", "-f", path)
	require.NoError(t, err, out)
	return path
}

// verify runs the auditor's command on message and sig, with an
// allowed_signers file holding the public key of keyPath.
func verify(t *testing.T, keyPath string, message, sig []byte, namespace string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	pub, err := os.ReadFile(keyPath + ".pub")
	require.NoError(t, err)
	fields := strings.Fields(string(pub))
	allowed := filepath.Join(dir, "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte("auditor@leasefence.test "+fields[0]+" "+fields[1]+"\n"), 0o644))
	sigPath := filepath.Join(dir, "report.json.sig")
	require.NoError(t, os.WriteFile(sigPath, sig, 0o644))
	return sshKeygen(t, message, "-Y", "verify", "-f", allowed, "-I", "auditor@leasefence.test", "-n", namespace, "-s", sigPath)
}

// A signature of each key type ssh-keygen makes verifies with the real
// `ssh-keygen -Y verify`; the same signature over a changed message, or in
// another namespace, does not.
func TestSignatureVerifiesWithSSHKeygenAndTamperingFails(t *testing.T) {
	t.Parallel()
	message := []byte(`{"schema_version":3,"body_digest":"sha256:00"}` + "\n")
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			key := newKey(t, kind, "")
			signer, err := LoadSigner(key)
			require.NoError(t, err)
			sig, err := Sign(signer, "leasefence-evidence", message)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(sig), "-----BEGIN SSH SIGNATURE-----\n"))
			require.True(t, strings.HasSuffix(string(sig), "\n-----END SSH SIGNATURE-----\n"))
			for _, line := range strings.Split(strings.TrimSpace(string(sig)), "\n") {
				require.LessOrEqual(t, len(line), 70)
			}
			out, err := verify(t, key, message, sig, "leasefence-evidence")
			require.NoError(t, err, out)
			require.Contains(t, out, `Good "leasefence-evidence" signature for auditor@leasefence.test`)

			tampered := []byte(strings.Replace(string(message), "3", "2", 1))
			out, err = verify(t, key, tampered, sig, "leasefence-evidence")
			require.Error(t, err, "a changed message must not verify: %s", out)
			out, err = verify(t, key, message, sig, "file")
			require.Error(t, err, "another namespace must not verify: %s", out)
		})
	}
}

// onlySigner hides every method but those of ssh.Signer.
type onlySigner struct{ ssh.Signer }

// failingSigner fails to sign.
type failingSigner struct{ ssh.Signer }

func (failingSigner) Sign(io.Reader, []byte) (*ssh.Signature, error) {
	return nil, errors.New("token removed")
}

func TestSignRefusesWhatOpenSSHWouldNotAccept(t *testing.T) {
	t.Parallel()
	rsa, err := LoadSigner(newKey(t, "rsa", ""))
	require.NoError(t, err)
	_, err = Sign(rsa, "", []byte("x"))
	require.EqualError(t, err, "sshsig: the namespace is empty")
	_, err = Sign(onlySigner{rsa}, "leasefence-evidence", []byte("x"))
	require.EqualError(t, err, "sshsig: this RSA signer cannot sign with rsa-sha2-512")
	ed, err := LoadSigner(newKey(t, "ed25519", ""))
	require.NoError(t, err)
	_, err = Sign(failingSigner{ed}, "leasefence-evidence", []byte("x"))
	require.EqualError(t, err, "sshsig: sign: token removed")
}

func TestLoadSignerRefusesOpenEncryptedAndBrokenKeys(t *testing.T) {
	t.Parallel()
	key := newKey(t, "ed25519", "")
	require.NoError(t, os.Chmod(key, 0o640))
	_, err := LoadSigner(key)
	require.ErrorIs(t, err, ErrKeyReadableByOthers)
	require.Contains(t, err.Error(), key+" is -rw-r-----")

	_, err = LoadSigner(newKey(t, "ed25519", "a passphrase"))
	require.ErrorIs(t, err, ErrKeyEncrypted)

	broken := filepath.Join(t.TempDir(), "broken")
	require.NoError(t, os.WriteFile(broken, []byte("not a key"), 0o600))
	_, err = LoadSigner(broken)
	require.ErrorContains(t, err, "sshsig: read the private key "+broken+": ")

	_, err = LoadSigner(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)

	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	_, err = LoadSigner(dir)
	require.ErrorIs(t, err, ErrKeyReadableByOthers, "a folder is no key file")

}

// WriteSignature writes a new file only, and the signature in it verifies.
func TestWriteSignatureWritesANewFileThatVerifies(t *testing.T) {
	t.Parallel()
	key := newKey(t, "ed25519", "")
	signer, err := LoadSigner(key)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "report.json.sig")
	require.NoError(t, WriteSignature(path, signer, "leasefence-evidence", []byte("report")))
	sig, err := os.ReadFile(path)
	require.NoError(t, err)
	out, err := verify(t, key, []byte("report"), sig, "leasefence-evidence")
	require.NoError(t, err, out)
	require.ErrorIs(t, WriteSignature(path, signer, "leasefence-evidence", []byte("report")), os.ErrExist)
	require.EqualError(t, WriteSignature(filepath.Join(t.TempDir(), "x.sig"), signer, "", nil), "sshsig: the namespace is empty")
}
