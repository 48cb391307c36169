//go:build !visnohook

package audit

// hookSkipped is false in every build but the test-only one
// (nohook_test_build.go): a release binary always installs the hook,
// whatever its environment says.
func hookSkipped() bool { return false }
