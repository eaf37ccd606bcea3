// Package textfmt writes durations, database times, JSON values and text
// from the database or an operator the way leasectl and its demo print
// them: one rule for each, so that the two never drift apart. Fprintf is
// how they print: it shows every text argument through Visible.
package textfmt
