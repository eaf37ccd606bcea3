package sqlbundle

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The checks durable_jobs.require_valid_change_reason makes in the
// database (is_plain_change_reason and looks_personal_or_secret in
// sql/functions/evidence.sql), made here too for a reason that is to be
// recorded before the database can check it: a migration's reason, which
// the bundle may not have installed yet. sql/integration's
// TestChangeReasonRuleAgreesWithTheDatabase runs the same inputs through
// both and fails when they disagree.
var (
	// notBlank is is_plain_change_reason's [^[:space:]]: PostgreSQL's
	// [:space:] is ASCII white space only in the database's C locale.
	notBlank = regexp.MustCompile(`[^ \t\n\v\f\r]`)
	// notPlain is is_plain_change_reason's class of control,
	// bidirectional-control and invisible characters, and NUL, which a
	// PostgreSQL text cannot hold.
	notPlain = regexp.MustCompile(`[\x00-\x1f\x7f-\x{9f}\x{61c}\x{200e}\x{200f}\x{2028}-\x{202e}\x{2066}-\x{2069}` +
		`\x{ad}\x{34f}\x{115f}\x{1160}\x{17b4}\x{17b5}\x{180b}-\x{180f}\x{200b}-\x{200f}\x{2060}-\x{206f}\x{3164}` +
		`\x{fe00}-\x{fe0f}\x{feff}\x{ffa0}\x{fff0}-\x{fff8}\x{e0000}-\x{e007f}]`)
	// invisible, dashes and stops are what screening_form removes or
	// rewrites as '-' and '.'.
	invisible = regexp.MustCompile(`[\x{ad}\x{34f}\x{115f}\x{1160}\x{17b4}\x{17b5}\x{180b}-\x{180f}\x{200b}-\x{200f}` +
		`\x{2060}-\x{206f}\x{3164}\x{fe00}-\x{fe0f}\x{feff}\x{ffa0}\x{fff0}-\x{fff8}\x{e0000}-\x{e007f}]`)
	dashes = regexp.MustCompile(`[\x{2010}-\x{2015}\x{2212}\x{fe58}\x{fe63}\x{ff0d}]`)
	stops  = regexp.MustCompile(`[\x{3002}\x{ff61}]`)
	// zeros are the digit zeros of the scripts whose digits screening_form
	// writes as ASCII digits.
	zeros = []rune{0x0660, 0x06f0, 0x0966, 0x09e6, 0x0e50, 0x1040, 0x17e0}
	// personal are looks_personal_or_secret's patterns, in RE2 syntax:
	// [:space:] is ASCII white space, \m (the start of a word) is the start
	// of the text or a character that is no ASCII letter, digit or
	// underscore before the word.
	personal = []*regexp.Regexp{
		regexp.MustCompile(`(^|[^0-9])[0-9]{6}[ \t\n\v\f\r._-]{0,3}[1-4][0-9]{6}([^0-9]|$)`),
		regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`),
		regexp.MustCompile(`(^|[^0-9])[(]?0[0-9]{1,2}[)]?[ \t\n\v\f\r._-]{0,3}[0-9]{3,4}[ \t\n\v\f\r._-]{0,3}[0-9]{4}([^0-9]|$)`),
		regexp.MustCompile(`\+[0-9][0-9 \t\n\v\f\r()._-]{7,}[0-9]`),
		regexp.MustCompile(`(?i)(password|passwd|pwd|pw|secret|token|api[_-]?key)[ \t\n\v\f\r]*[=:]`),
		regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_])pass[ \t\n\v\f\r]*[=:]`),
		regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_])(password|passwd|passphrase)[ \t\n\v\f\r]+is[ \t\n\v\f\r]+[^ \t\n\v\f\r]`),
	}
	cardCandidate   = regexp.MustCompile(`[0-9](?:[ \t\n\v\f\r._-]?[0-9]){12,18}`)
	nonDigits       = regexp.MustCompile(`[^0-9]`)
	maxReasonLength = 500
)

// passesLuhn reports whether a string of 13 to 19 digits passes the Luhn
// check (durable_jobs.passes_luhn).
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

// screeningForm is durable_jobs.screening_form: NFKC, invisible characters
// removed, dashes and stops made ASCII, other scripts' digits made ASCII.
func screeningForm(s string) string {
	s = stops.ReplaceAllString(dashes.ReplaceAllString(invisible.ReplaceAllString(norm.NFKC.String(s), ""), "-"), ".")
	return strings.Map(func(r rune) rune {
		for _, zero := range zeros {
			if r >= zero && r <= zero+9 {
				return '0' + r - zero
			}
		}
		return r
	}, s)
}

// LooksPersonalOrSecret reports whether text looks like personal data or a
// secret, as durable_jobs.looks_personal_or_secret reads it (a heuristic:
// it refuses what looks like such data and cannot prove its absence).
func LooksPersonalOrSecret(s string) bool {
	s = screeningForm(s)
	for _, p := range personal {
		if p.MatchString(s) {
			return true
		}
	}
	for _, c := range cardCandidate.FindAllString(s, -1) {
		if passesLuhn(nonDigits.ReplaceAllString(c, "")) {
			return true
		}
	}
	return false
}

// isPlainReason is durable_jobs.is_plain_change_reason, for text that is
// UTF-8 (anything else cannot be sent to the database at all).
func isPlainReason(s string) bool {
	return utf8.ValidString(s) && notBlank.MatchString(s) && utf8.RuneCountInString(s) <= maxReasonLength &&
		!notPlain.MatchString(s)
}

// ReasonLooksPersonal is the Problem of CheckChangeReason's refusal of a
// reason that looks like personal data or a secret.
const ReasonLooksPersonal = "looks like it holds personal data or a secret (a resident registration, card or phone number, " +
	"an e-mail address or a credential); evidence is kept for good, so give a ticket reference instead"

// ReasonError is CheckChangeReason's refusal of a change reason. Its
// text says what is wrong and never repeats the reason.
type ReasonError struct {
	// Problem says what is wrong, e.g. "must be 1 to 500 characters, ...".
	Problem string
}

// Error is the problem.
func (e *ReasonError) Error() string { return e.Problem }

// CheckChangeReason returns a *ReasonError when reason is not one the
// database records as a change reason (durable_jobs.require_valid_change_reason,
// SQLSTATE 22023): blank, longer than 500 characters, holding control or
// bidirectional-control characters, or looking like personal data or a
// secret (a resident registration, card or phone number, an e-mail
// address or a credential). It returns nil for an acceptable reason.
func CheckChangeReason(reason string) error {
	switch {
	case !isPlainReason(reason):
		return &ReasonError{Problem: "must be 1 to 500 characters, not blank, without control or bidirectional-control characters"}
	case LooksPersonalOrSecret(reason):
		return &ReasonError{Problem: ReasonLooksPersonal}
	}
	return nil
}
