// Package textfmt is the public package textfmt under its former path,
// which leasectl's files still import: each function calls its namesake
// there.
package textfmt
