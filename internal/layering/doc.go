// Package layering holds the test that keeps the repository's rooms apart:
// which of the module's packages each package may import (the README's
// "Layout" section says the same in prose). It has no code of its own; its
// test reads the import graph with go list and fails on any import the
// rules do not allow.
package layering
