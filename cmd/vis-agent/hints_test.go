package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestSandboxHints: lines written for a shell or IPython name what does
// it here; a grammar error the repair does not handle is Python's own
// message; a jail's refusal under a library's error is named; a shell
// handle shows its last lines; a restart's notice names who asked for it.
func TestSandboxHints(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		sb := newSandbox(t, py)
		for code, want := range map[string]string{
			"!pip install requests pandas": `install("requests", "pandas")`,
			"%pip install -q numpy":        `install("numpy")`,
			"x = 1\n!ls -la":               `shell("ls -la")`,
			"%cd /tmp":                     `os.chdir("/tmp")`,
			"%timeit 1":                    `shell("…")`,
		} {
			r := sb.block("h", code, 1)
			if !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "was found to repair") || strings.Count(r.stderr, "Hint:") != 1 {
				t.Errorf("%s: %q: %s", py.Version, code, r.stderr)
			}
		}
		r := sb.block("h", "def f():\nreturn 1", 1)
		if !strings.Contains(r.stderr, "IndentationError") && !strings.Contains(r.stderr, "expected an indented block") || strings.Contains(r.stderr, "repair") {
			t.Errorf("%s: an IndentationError: %s", py.Version, r.stderr)
		}
		// A library that reads the jail's refusal as something else: the
		// hint names the refusal under its own last line.
		r = sb.block("h", `try:
    open("/etc/shadow")
except OSError as e:
    raise ImportError("the driver install you are using seems to be broken") from e`, 1)
		contains(t, fmt.Sprint(py.Version)+": a refusal under a library's error", r.stderr, "seems to be broken",
			"Hint: the cause is the jail: PermissionError: open /etc/shadow: refused by the sandbox's jail (outside its roots)")
		r = sb.block("h", "h = shell('for i in 1 2 3 4 5 6 7; do echo line$i; done')\nh.wait()\nh", 0)
		contains(t, fmt.Sprint(py.Version)+": a shell handle", r.stdout, "exited, exit 0", "out (last 5 lines):\n  line3\n  line4\n  line5\n  line6\n  line7")
	}

	sb := newSandbox(t, oldestAndNewest(t)[0])
	c := connectMCP(t, sb, "--session", "hints")
	c.python("x = 1", false)
	c.tool("restart_session", nil)
	if text, _ := c.python("print(x)", false); !strings.Contains(text, "restarted (by mcp: vis-agent-test)") {
		t.Errorf("the notice of an MCP restart: %q", text)
	}
	if text, _ := c.python("import time\ntime.sleep(10)", true, "timeout_s", 3); !strings.Contains(text, "The timeout was 3 seconds") ||
		!strings.Contains(text, "timeout of 3 seconds") {
		t.Errorf("a timeout's wording: %q", text)
	}
}
