package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxEcho: a block's trailing expression shows its repr after the
// output (cut to 4 KB), in `sandbox run` and through MCP; the session's
// listings show whole; --no-echo and sandbox.echo = false turn it off.
func TestSandboxEcho(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		sb := newSandbox(t, py)
		if r := sb.block("e", "print('out')\n{'a': 1}", 0); r.stdout != "out\n{'a': 1}\n" {
			t.Errorf("%s: a trailing expression: %q", py.Version, r.stdout)
		}
		if r := sb.block("e", "x = None\nx", 0); r.stdout != "" {
			t.Errorf("%s: a trailing None: %q", py.Version, r.stdout)
		}
		if r := sb.block("e", "'y' * 10000", 0); !strings.Contains(r.stdout, "repr cut: 5,906 more characters") || len(r.stdout) > 4300 {
			t.Errorf("%s: a long repr: %d chars, ends %q", py.Version, len(r.stdout), r.stdout[max(0, len(r.stdout)-120):])
		}
		sb.block("e", "def top(n):\n    return list(range(n))", 0)
		if r := sb.block("e", "defs()", 0); !strings.Contains(r.stdout, "top(n)") {
			t.Errorf("%s: defs() as the last line: %q", py.Version, r.stdout)
		}
		if r := sb.block("e", "apropos('cat')", 0); !strings.Contains(r.stdout, "cat") || strings.Contains(r.stdout, "Row(") {
			t.Errorf("%s: apropos() as the last line: %q", py.Version, r.stdout)
		}
		if r := sb.block("e", "1 + 1", 0, "--no-echo"); r.stdout != "" {
			t.Errorf("%s: --no-echo: %q", py.Version, r.stdout)
		}
		if r := sb.run("run", "--session", "e", "--echo", "--no-echo", "-c", "1"); r.code != 2 || !strings.Contains(r.stderr, "not both") {
			t.Errorf("%s: --echo --no-echo: %+v", py.Version, r)
		}
		if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\necho = false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := sb.block("e", "1 + 1", 0); r.stdout != "" {
			t.Errorf("%s: sandbox.echo = false: %q", py.Version, r.stdout)
		}
		if r := sb.block("e", "1 + 1", 0, "--echo"); r.stdout != "2\n" {
			t.Errorf("%s: --echo over sandbox.echo = false: %q", py.Version, r.stdout)
		}
		os.Remove(filepath.Join(sb.home, "config.toml"))
	}

	sb := newSandbox(t, oldestAndNewest(t)[0])
	c := connectMCP(t, sb)
	if text, _ := c.python("print('out')\n6 * 7", false); text != "out\n42\n" {
		t.Errorf("MCP: a trailing expression: %q", text)
	}
	if text, _ := c.python("list_attachments()", false); !strings.Contains(text, "(none)") {
		t.Errorf("MCP: list_attachments() as the last line: %q", text)
	}
}
