package host

import (
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestResultHints: a block's failed connection under an allow list gets
// one line naming what the list lets through and how the user widens it;
// without an allow list, or for another error, nothing is added.
func TestResultHints(t *testing.T) {
	list := protocol.Policy{Network: true, Hosts: &protocol.Hosts{Allow: []string{"pypi.org", "files.pythonhosted.org"}}}
	none := protocol.Policy{Network: true, Hosts: &protocol.Hosts{Allow: []string{}}}
	on := protocol.Policy{Network: true}
	for _, c := range []struct {
		typ, msg string
		policy   protocol.Policy
		want     string
	}{
		{"URLError", "<urlopen error Tunnel connection failed: 403 vis-agent: host x.test is not in the session's allow list (…)>", list,
			"Hint: this session's network reaches only pypi.org, files.pythonhosted.org, through the proxy at HTTP_PROXY"},
		{"HTTPError", "HTTP Error 403: vis-agent: host x.test is not in the session's allow list", list, "--allow-host HOST or sandbox.allow_hosts"},
		{"gaierror", "[Errno -3] Temporary failure in name resolution", none, "reaches no host"},
		{"OSError", "[Errno 101] Network is unreachable", list, "--network on"},
		{"GeneralProxyError", "Socket error: 0x02: Connection not allowed by ruleset", list, "Hint: this session's network"},
		{"OSError", "[Errno 101] Network is unreachable", on, ""},
		{"ValueError", "bad value", list, ""},
		{"PermissionError", "shell: the allow list needs a network namespace …; nothing ran", list, ""},
		// Where no pids cgroup holds the child's processes, none starts.
		{"PermissionError", "subprocess.Popen: refused by the sandbox's jail (no new processes)", on, `Hint: shell("cmd") runs a command`},
		{"BlockingIOError", "[Errno 11] Resource temporarily unavailable", protocol.Policy{MaxThreads: 64}, "reached its cap (64, sandbox.max_threads)"},
	} {
		res := protocol.Result{Error: &protocol.BlockError{Type: c.typ, Message: c.msg, Traceback: "Traceback …\n"}}
		resultHints(&res, c.policy)
		got := strings.TrimPrefix(res.Error.Traceback, "Traceback …\n")
		if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, c.want) || strings.Count(got, "\n") != 1) {
			t.Errorf("%s %q under %s: %q, want %q", c.typ, c.msg, c.policy.NetworkText(), got, c.want)
		}
	}
}
