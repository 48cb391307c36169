package mcpserver

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestBoundNamesMatchTheDriver keeps the python tool's list of bound names
// in step with what the session's driver binds.
func TestBoundNamesMatchTheDriver(t *testing.T) {
	src, err := os.ReadFile("../child/py/vis_sandbox/driver.py")
	if err != nil {
		t.Fatal(err)
	}
	imports := regexp.MustCompile(`(?s)AUTO_IMPORTS = \((.*?)\)`).FindSubmatch(src)
	names := regexp.MustCompile(`(?s)AUTO_NAMES = \{(.*?)\}\n`).FindSubmatch(src)
	if imports == nil || names == nil {
		t.Fatal("driver.py has no AUTO_IMPORTS or AUTO_NAMES")
	}
	var want []string
	for _, m := range regexp.MustCompile(`"(\w+)"`).FindAllSubmatch(imports[1], -1) {
		want = append(want, string(m[1]))
	}
	for _, m := range regexp.MustCompile(`"(\w+)":`).FindAllSubmatch(names[1], -1) {
		want = append(want, string(m[1]))
	}
	got := append([]string(nil), boundNames...)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the description names %v; the driver binds %v", got, want)
	}
}

// TestSessionFunctionsMatchTheTools: the python tool's description names
// every function the session binds (vis_sandbox/tools.py's NAMES).
func TestSessionFunctionsMatchTheTools(t *testing.T) {
	src, err := os.ReadFile("../child/py/vis_sandbox/tools.py")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`(?s)\nNAMES = \((.*?)\)`).FindSubmatch(src)
	if names == nil {
		t.Fatal("tools.py has no NAMES")
	}
	described := strings.Join(sessionFunctions, "; ")
	for _, m := range regexp.MustCompile(`"(\w+)"`).FindAllSubmatch(names[1], -1) {
		if !strings.Contains(described, string(m[1])+"(") {
			t.Errorf("the description does not name %s()", m[1])
		}
	}
}
