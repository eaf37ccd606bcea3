// Package clienthook holds the hooks goclient installs at init for the
// module's own code: internal/leaseport reads them to reach goclient's
// unexported renewal port. It imports nothing of goclient (goclient imports
// it), so its hooks are untyped; use internal/leaseport, never this package.
package clienthook
