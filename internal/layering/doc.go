// Package layering holds the test that keeps the repository's rooms apart:
// which of the module's packages each package may import (the README's
// "Layout" section says the same in prose), and that no public package (one
// a program outside the module imports: anything but internal/, cmd/,
// examples/, bench/, scripts/ and the test-only packages) imports an
// internal one. It has no code of its own; its test reads the import graph
// with go list (of the main module and the bench module, which go.work
// joins) and fails on any import the rules do not allow, and on a bench or
// campaign package among the main module's own.
package layering
