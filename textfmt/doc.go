// Package textfmt writes durations, database times, JSON values and text
// from the database or an operator the way leasefence prints them (leasectl,
// its demo and the evidence report's Markdown): one rule for each, so that
// they never drift apart. Fprintf is how they print: it shows every text
// argument through Visible.
package textfmt
