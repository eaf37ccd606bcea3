package main

import (
	"regexp"
	"strings"
	"unicode"
)

// The checks durable_jobs.require_structured_change makes in the
// database, made here too for text leasectl records before the database
// can check it (a migration's reason, which the bundle may not have
// installed yet). Keep the patterns in step with
// looks_personal_or_secret in sql/functions/evidence.sql.
var (
	rrnPattern      = regexp.MustCompile(`(^|[^0-9])[0-9]{6}-?[1-4][0-9]{6}([^0-9]|$)`)
	emailPattern    = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	phonePattern    = regexp.MustCompile(`(^|[^0-9])0[0-9]{1,2}[ .-]?[0-9]{3,4}[ .-]?[0-9]{4}([^0-9]|$)`)
	intlPattern     = regexp.MustCompile(`\+[0-9][0-9 .-]{7,}[0-9]`)
	secretPattern   = regexp.MustCompile(`(?i)(password|passwd|pwd|pw|secret|token|api[_-]?key)\s*[=:]`)
	cardCandidate   = regexp.MustCompile(`[0-9](?:[ -]?[0-9]){12,18}`)
	forbiddenRunes  = []rune{0x061c, 0x200e, 0x200f}
	bidiRangeRunes  = [][2]rune{{0x2028, 0x202e}, {0x2066, 0x2069}}
	maxReasonLength = 500
)

// passesLuhn reports whether a string of 13 to 19 digits passes the Luhn
// check.
func passesLuhn(digits string) bool {
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if (len(digits)-1-i)%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// looksPersonalOrSecret is durable_jobs.looks_personal_or_secret.
func looksPersonalOrSecret(s string) bool {
	if rrnPattern.MatchString(s) || emailPattern.MatchString(s) || phonePattern.MatchString(s) ||
		intlPattern.MatchString(s) || secretPattern.MatchString(s) {
		return true
	}
	for _, c := range cardCandidate.FindAllString(s, -1) {
		if passesLuhn(strings.NewReplacer(" ", "", "-", "").Replace(c)) {
			return true
		}
	}
	return false
}

// isPlainReason is durable_jobs.is_plain_change_reason.
func isPlainReason(s string) bool {
	if strings.TrimSpace(s) == "" || len([]rune(s)) > maxReasonLength {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
		for _, f := range forbiddenRunes {
			if r == f {
				return false
			}
		}
		for _, rg := range bidiRangeRunes {
			if r >= rg[0] && r <= rg[1] {
				return false
			}
		}
	}
	return true
}

// personalReasonProblem says why a reason that looks like personal data or
// a secret is refused.
const personalReasonProblem = "looks like it holds personal data or a secret (a resident registration, card or phone number, an e-mail address or a credential); evidence is kept for good, so give a ticket reference instead"

// reasonProblem says what is wrong with a reason for append-only
// evidence, or "" when it is acceptable. It never repeats the reason.
func reasonProblem(s string) string {
	switch {
	case !isPlainReason(s):
		return "must be 1 to 500 characters, not blank, without control or bidirectional-control characters"
	case looksPersonalOrSecret(s):
		return personalReasonProblem
	}
	return ""
}
