// Command soak runs the reliability campaign for as many checked
// operations as asked (make soak OPS=N SEED=S) against the bundle as it
// stands in the checkout, and ends with exactly one line:
//
//	soak: N operations checked, K fault kinds, V violations, seed S
//
// Each violation, with its sub-history, goes to standard error before that
// line, and the histories are kept in a folder it names. It exits 1 when V
// is not zero, and 2 when the campaign could not run.
package main
