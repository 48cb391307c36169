package mcpserver

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
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

// TestInstructionsSayTheNetwork: the server's instructions and the python
// tool's description say what the session's network reaches, and under
// an allow list that the user widens it.
func TestInstructionsSayTheNetwork(t *testing.T) {
	for _, c := range []struct {
		policy protocol.Policy
		want   string
	}{
		{protocol.Policy{Jail: true, Network: true, Hosts: &protocol.Hosts{Allow: []string{"pypi.org", "files.pythonhosted.org"}}},
			"Network: only pypi.org, files.pythonhosted.org, through a proxy (HTTP_PROXY is set; pip, requests, curl and git use it); others get HTTP 403. " +
				"Only the user can allow another host (--allow-host HOST or sandbox.allow_hosts in ~/.vis/config.toml): ask them."},
		{protocol.Policy{Jail: true, Network: true, Hosts: &protocol.Hosts{Allow: []string{}, Deny: []string{"x.test"}}}, "Network: no host (never x.test), through a proxy"},
		{protocol.Policy{Jail: true, Network: true}, "Network on."},
		{protocol.Policy{Jail: true}, "Network off."},
	} {
		sv := &server{home: &client.Session{Meta: session.Meta{Name: "s", Workspace: "/w"}}, policy: c.policy}
		if got := sv.instructions(); !strings.Contains(got, c.want) {
			t.Errorf("instructions under %s: %q, want %q", c.policy, got, c.want)
		}
		if got := sv.pythonDescription(); !strings.Contains(got, c.want) {
			t.Errorf("python's description under %s: %q, want %q", c.policy, got, c.want)
		}
	}
}
