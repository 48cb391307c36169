// Package importpolicy states which packages of vis-agent may import which,
// in its tests (in the manner of Go's src/go/build/deps_test.go): an allow
// list naming every package of the module with the packages of the module
// it may import, rules no line of it may break (protocol at the bottom,
// the front ends behind sandbox/client, a loader that knows no policy, no
// test support in production code…), and the cgo checks (pure-Go packages
// reach no cgo package of the module, cgo and unsafe code in *_unsafe*.go
// files). It holds no code; `go test ./internal/importpolicy` checks the
// tree.
package importpolicy
