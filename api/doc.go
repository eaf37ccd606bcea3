// Package api keeps the golden listing of the module's public API:
// one file per public package (every package outside internal/ and cmd/
// that is not a command), holding its exported declarations without their
// comments, so a change of the public surface shows in review as a change
// of these files. Regenerate them with
//
//	go test ./api -run TestPublicAPI -update
package api
