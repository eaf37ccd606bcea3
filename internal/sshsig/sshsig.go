package sshsig

import (
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
)

// magic starts both the signed data and the signature blob.
const magic = "SSHSIG"

// hashAlgorithm is the hash of the message, as ssh-keygen's default.
const hashAlgorithm = "sha512"

// appendString appends an SSH string: a uint32 length and the bytes.
func appendString(b, s []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

// signedData is what the key signs (PROTOCOL.sshsig): the magic preamble,
// the namespace, an empty reserved string, the hash algorithm and the
// message's hash.
func signedData(namespace string, message []byte) []byte {
	sum := sha512.Sum512(message)
	b := []byte(magic)
	b = appendString(b, []byte(namespace))
	b = appendString(b, nil)
	b = appendString(b, []byte(hashAlgorithm))
	return appendString(b, sum[:])
}

// Sign returns the armored SSH signature ("-----BEGIN SSH SIGNATURE-----")
// of message by signer in namespace, which `ssh-keygen -Y verify -n
// namespace` accepts. An RSA key signs with rsa-sha2-512 (SHA-1 signatures
// are refused by OpenSSH); an RSA signer that cannot choose its algorithm
// is an error.
func Sign(signer ssh.Signer, namespace string, message []byte) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: the namespace is empty")
	}
	data := signedData(namespace, message)
	var sig *ssh.Signature
	var err error
	if signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		algorithmSigner, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, errors.New("sshsig: this RSA signer cannot sign with rsa-sha2-512")
		}
		sig, err = algorithmSigner.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sshsig: sign: %w", err)
	}
	blob := binary.BigEndian.AppendUint32([]byte(magic), 1)
	blob = appendString(blob, signer.PublicKey().Marshal())
	blob = appendString(blob, []byte(namespace))
	blob = appendString(blob, nil)
	blob = appendString(blob, []byte(hashAlgorithm))
	blob = appendString(blob, ssh.Marshal(sig))
	return armor(blob), nil
}

// armor writes the blob as ssh-keygen does: base64 in lines of 70
// characters between BEGIN and END lines.
func armor(blob []byte) []byte {
	encoded := base64.StdEncoding.EncodeToString(blob)
	var b strings.Builder
	b.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(encoded) > 70 {
		b.WriteString(encoded[:70] + "\n")
		encoded = encoded[70:]
	}
	b.WriteString(encoded + "\n-----END SSH SIGNATURE-----\n")
	return []byte(b.String())
}

// ErrKeyReadableByOthers is returned by LoadSigner for a key file that
// another account may read or write (as ssh refuses one).
var ErrKeyReadableByOthers = errors.New("sshsig: the private key file is accessible by others (chmod 600 it)")

// ErrKeyEncrypted is returned by LoadSigner for a key protected by a
// passphrase, which it cannot ask for.
var ErrKeyEncrypted = errors.New("sshsig: the private key is protected by a passphrase; give an unencrypted key kept on the signing host (mode 600)")

// LoadSigner reads an unencrypted private key (OpenSSH, PKCS#1, PKCS#8 or
// SEC 1 PEM) from path, refusing one whose file other accounts may access.
func LoadSigner(path string) (ssh.Signer, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s", ErrKeyReadableByOthers, path, info.Mode())
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, ErrKeyEncrypted
	}
	if err != nil {
		return nil, fmt.Errorf("sshsig: read the private key %s: %w", path, err)
	}
	return signer, nil
}

// WriteSignature signs message with signer in namespace and writes the
// armored signature to path, which must not exist yet (mode 644: a
// signature is public).
func WriteSignature(path string, signer ssh.Signer, namespace string, message []byte) error {
	sig, err := Sign(signer, namespace, message)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(sig); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
