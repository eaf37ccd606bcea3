// Package demotest holds the checks that the tests of internal/demo and of
// cmd/leasectl's demo command share: what a demo run left in the database,
// and what it printed. Only tests import it.
package demotest
