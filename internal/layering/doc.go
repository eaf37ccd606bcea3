// Package layering holds the test that keeps the repository's rooms apart:
// which of the module's packages each package may import (the README's
// "Layout" section says the same in prose), and that no public package (one
// a program outside the module imports: anything but internal/, cmd/,
// examples/, bench/, scripts/ and the test-only packages) imports an
// internal one. It has no code of its own; its test reads the import graph
// with go list and fails on any import the rules do not allow.
package layering
