package demo

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// scramIterations is the PBKDF2 iteration count of the verifiers leasectl
// makes: PostgreSQL's own default (scram_iterations).
const scramIterations = 4096

// newSCRAMVerifier returns a SCRAM-SHA-256 verifier of password with a new
// random 16-byte salt, in the form PostgreSQL stores and accepts in CREATE
// ROLE ... PASSWORD: the server keeps it as it is, so the password itself
// never travels in SQL text or reaches a server log.
func newSCRAMVerifier(password string) string {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails on supported platforms
	return scramVerifier(password, salt, scramIterations)
}

// scramVerifier computes the SCRAM-SHA-256 verifier of password (RFC 5802
// and RFC 7677) as PostgreSQL writes it:
//
//	SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
//
// in standard base64, where SaltedPassword = PBKDF2-HMAC-SHA-256(password,
// salt, iterations), StoredKey = SHA-256(HMAC(SaltedPassword, "Client Key"))
// and ServerKey = HMAC(SaltedPassword, "Server Key"). PostgreSQL first
// normalizes a password with SASLprep; for the ASCII letters and digits of
// the demo's passwords that changes nothing, so they are used as they are.
func scramVerifier(password string, salt []byte, iterations int) string {
	// PBKDF2 fails only for a key length out of range or, in FIPS 140-only
	// mode, for a short password or salt; the demo's 32-character passwords
	// and 16-byte salts pass in every mode.
	salted := must(pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size))
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	storedKey := sha256.Sum256(mac(salted, "Client Key"))
	serverKey := mac(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(storedKey[:]), b64(serverKey))
}
