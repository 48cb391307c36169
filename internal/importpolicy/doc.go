// Package importpolicy states which packages of vis-agent may import which,
// in its tests (in the manner of Go's src/go/build/deps_test.go): the front
// ends reach a session only through sandbox/client, the pure-Go packages
// build without cgo and reach none of the module's cgo packages, and pyembed
// stays a loader that knows nothing of the sandbox's policy. It holds no
// code; `go test ./internal/importpolicy` checks the tree.
package importpolicy
