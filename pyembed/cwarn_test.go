package pyembed

import (
	"os/exec"
	"strings"
	"testing"
)

// shimWarnings are the warnings the shim is kept clean of. The build turns
// on -Wall -Wextra without -Werror, so a newer compiler's new warning never
// breaks a user's build; this test makes any warning fail here.
var shimWarnings = []string{"-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wstrict-prototypes", "-Wformat=2", "-Wconversion"}

// TestShimCompilesWithoutWarnings compiles shim.c and hostcall.c with the C compiler cgo
// uses.
func TestShimCompilesWithoutWarnings(t *testing.T) {
	out, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatalf("go env CC: %v", err)
	}
	cc := strings.Fields(string(out))
	if len(cc) == 0 {
		t.Fatal("go env CC is empty")
	}
	args := append(cc[1:], shimWarnings...)
	args = append(args, "-fsyntax-only", "shim.c", "hostcall.c")
	if out, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc[0], strings.Join(args, " "), err, out)
	}
}
