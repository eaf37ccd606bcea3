// Package sshsig signs a file the way `ssh-keygen -Y sign` does: a
// detached SSH signature (OpenSSH's SSHSIG format, PROTOCOL.sshsig) that an
// auditor checks with the OpenSSH tools already on their machine:
//
//	ssh-keygen -Y verify -f allowed_signers -I identity -n leasefence-evidence -s FILE.sig < FILE
//
// The cryptography is golang.org/x/crypto/ssh's (its Signer over an
// OpenSSH, PKCS#1, PKCS#8 or SEC 1 private key); this package only builds
// the small SSHSIG envelope around its signature: the message is hashed
// with SHA-512, and RSA keys sign with rsa-sha2-512, as ssh-keygen does.
package sshsig
