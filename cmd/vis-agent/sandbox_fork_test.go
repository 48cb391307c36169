package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestMCPFork, on the oldest and newest CPython, through a real MCP
// client: fork_session makes a fork of the session and switches to it; a
// block there diverges while the original, switched back to, is
// unchanged; a named fork of the last state; sandbox list says where the
// forks came from; switch_session refuses a session of the workspace the
// server did not make, and fork_session an existing name and a block not
// in the history.
func TestMCPFork(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("other", "secret = 1", 0) // the workspace's, not the server's
			c := connectMCP(t, sb, "--session", "m")
			c.python("x = [1, 2, 3]", false)
			c.python("x.append(4)", false)
			contains(t, "fork_session", c.tool("fork_session", map[string]any{"at": 1}),
				"Forked session m-fork-1 from m after block 1, and switched to it", `switch_session with name "m" goes back`)
			text, _ := c.python("x.append(99)\nprint(x)", false)
			contains(t, "in the fork", text, "[Sandbox restarted] The session was forked from session m after block 1", "[1, 2, 3, 99]\n")
			contains(t, "defs in the fork", c.tool("defs", nil), "x")
			c.python("attach(b'of the fork', 'f.txt')", false)
			contains(t, "the fork's attachments", c.tool("list_attachments", nil), "f.txt version 1", "vis-attachment://m-fork-1/att_")
			contains(t, "back", c.tool("switch_session", map[string]any{"name": "m"}), "Switched to session m")
			text, _ = c.python("print(x)", false)
			contains(t, "the original", text, "[1, 2, 3, 4]\n")
			contains(t, "the original's attachments", c.tool("list_attachments", nil), "No attachments yet")
			if rc, err := c.readResource("vis-attachment://m-fork-1/f.txt"); err != nil || rc.Text != "of the fork" {
				t.Errorf("the fork's attachment as a resource: %+v %v", rc, err)
			}
			if _, err := c.readResource("vis-attachment://other/f.txt"); err == nil {
				t.Error("a resource of a session the server did not make was read")
			}

			contains(t, "a named fork", c.tool("fork_session", map[string]any{"name": "try"}), "Forked session try from m after its last block")
			text, _ = c.python("x.clear()\nprint(x)", false)
			contains(t, "in the named fork", text, "[]\n")
			c.tool("switch_session", map[string]any{"name": "m-fork-1"})
			text, _ = c.python("print(x)", false)
			contains(t, "the first fork again", text, "[1, 2, 3, 99]\n")

			for _, bad := range []struct {
				tool string
				args map[string]any
				want string
			}{
				{"switch_session", map[string]any{"name": "other"}, `session "other" is not this server's: it switches among "m", "m-fork-1", "try"`},
				{"fork_session", map[string]any{"name": "try"}, `session "try" of workspace`},
				{"fork_session", map[string]any{"at": 42}, "block 42 is not in its history"},
				{"fork_session", map[string]any{"name": "../x"}, "invalid session name"},
			} {
				text, isErr, err := c.toolResult(bad.tool, bad.args)
				if err != nil || !isErr || !strings.Contains(text, bad.want) {
					t.Errorf("%s %v: %v %v %q, want %q", bad.tool, bad.args, err, isErr, text, bad.want)
				}
			}
			contains(t, "sandbox list", sb.run("list").stdout, "forked from m at block 1 (m-fork-1)\n", "forked from m (try)\n")
			r := sb.block("m", "print(x)", 0)
			contains(t, "the original from the command line", r.stdout, "[1, 2, 3, 4]\n")
			text, _, isErr, _ := c.call(context.Background(), "python", map[string]any{"code": "print(secret)"}, false)
			if !isErr || !strings.Contains(text, "NameError") {
				t.Errorf("a fork reached the workspace's other session: %q", text)
			}
		})
	}
}

// TestSandboxForkWorkspace, on the oldest and newest CPython: a fork into
// its own workspace with the files copied, where symlinks stay links
// (never followed out of the workspace) and what the session could not
// read is left out; the fork's edits leave the original's files alone;
// a fork into another workspace without a copy; the refusals (a
// non-empty folder, one inside the workspace, --copy-workspace alone).
func TestSandboxForkWorkspace(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			outside := t.TempDir()
			write(t, filepath.Join(outside, "secret.txt"), "the secret")
			write(t, filepath.Join(sb.ws, "data.txt"), "hello")
			write(t, filepath.Join(sb.ws, "sub", "nested.txt"), "nested")
			symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(sb.ws, "link-out"))
			symlink(t, outside, filepath.Join(sb.ws, "dir-out"))
			symlink(t, "data.txt", filepath.Join(sb.ws, "sub", "link-in"))
			if err := syscall.Mkfifo(filepath.Join(sb.ws, "pipe"), 0o600); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(sb.ws, "unreadable.txt"), "no")
			os.Chmod(filepath.Join(sb.ws, "unreadable.txt"), 0)
			sb.block("a", "x = 5", 0)

			dest := filepath.Join(t.TempDir(), "copy")
			t.Cleanup(sb.stopAll) // before the folders go
			r := sb.run("fork", "b", "--session", "a", "--new-workspace", dest, "--copy-workspace")
			if r.code != 0 {
				t.Fatalf("fork --copy-workspace: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			contains(t, "fork --copy-workspace", r.stdout, "Forked session b from a after its last block", "Its workspace is "+dest+" (")
			for name, want := range map[string]string{"data.txt": "hello", "sub/nested.txt": "nested"} {
				if data, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(data) != want {
					t.Errorf("copied %s: %q %v", name, data, err)
				}
			}
			for link, target := range map[string]string{"link-out": filepath.Join(outside, "secret.txt"), "dir-out": outside, "sub/link-in": "data.txt"} {
				if got, err := os.Readlink(filepath.Join(dest, link)); err != nil || got != target {
					t.Errorf("%s: a link to %q %v, want one to %q", link, got, err, target)
				}
			}
			if _, err := os.Lstat(filepath.Join(dest, "pipe")); err == nil {
				t.Error("a FIFO was copied")
			}
			if _, err := os.Lstat(filepath.Join(dest, "unreadable.txt")); err == nil {
				t.Error("a file the session cannot read was copied")
			}
			r = sb.block("b", "import os\nprint(x, open('data.txt').read(), os.getcwd())\nopen('data.txt', 'w').write('changed')", 0, "--workspace", dest)
			contains(t, "the fork", r.stdout, "forked from session a of "+sb.ws+" after its last block", "5 hello "+dest+"\n")
			if data, _ := os.ReadFile(filepath.Join(sb.ws, "data.txt")); string(data) != "hello" {
				t.Errorf("the original's file after the fork's edit: %q", data)
			}
			contains(t, "sandbox list", sb.run("list").stdout, "forked from a of "+sb.ws+" (b)")

			// another workspace, made, nothing copied
			empty := filepath.Join(t.TempDir(), "empty")
			contains(t, "fork --new-workspace", sb.run("fork", "e", "--session", "a", "--new-workspace", empty).stdout, "Its workspace is "+empty+" (no files copied)")
			contains(t, "the fork in an empty workspace", sb.block("e", "import os\nprint(x, os.listdir('.'))", 0, "--workspace", empty).stdout, "5 []\n")

			for _, bad := range []struct {
				args []string
				code int
				want string
			}{
				{[]string{"--new-workspace", dest, "--copy-workspace"}, 1, "is not empty: --copy-workspace copies into a new or empty folder"},
				{[]string{"--new-workspace", filepath.Join(sb.ws, "sub"), "--copy-workspace"}, 1, "inside the session's workspace"},
				{[]string{"--new-workspace", sb.ws}, 1, "inside the session's workspace"},
				{[]string{"--copy-workspace"}, 2, "give --new-workspace DIR"},
			} {
				r := sb.run(append([]string{"fork", "c", "--session", "a"}, bad.args...)...)
				if r.code != bad.code || !strings.Contains(r.stderr, bad.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
					t.Errorf("fork %v: %d %q, want %d and one line with %q", bad.args, r.code, r.stderr, bad.code, bad.want)
				}
			}
		})
	}
}

// TestSandboxForkWorkspaceBudget: a workspace whose files take more than
// the session's disk budget is not copied, and nothing is left behind: no
// folder, no stage, no session.
func TestSandboxForkWorkspaceBudget(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nmax_disk_mb = 64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sb.ws, "small.txt"), "s")
	big := filepath.Join(sb.ws, "big.bin")
	write(t, big, "")
	if err := os.Truncate(big, 65<<20); err != nil { // sparse: no disk taken
		t.Fatal(err)
	}
	sb.block("a", "x = 1", 0)
	parent := t.TempDir()
	r := sb.run("fork", "b", "--session", "a", "--new-workspace", filepath.Join(parent, "copy"), "--copy-workspace")
	want := "the workspace's files take 65.0 MiB, more than the session's disk budget (sandbox.max_disk_mb = 64): nothing was copied"
	if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("a copy past the budget: %d %q, want one line with %q", r.code, r.stderr, want)
	}
	if left, _ := os.ReadDir(parent); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if strings.Contains(sb.run("list").stdout, "forked") {
		t.Error("the fork was made")
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxRewindNoHistory: sandbox.history_blocks = 0 keeps no
// history, and a rewind says so.
func TestSandboxRewindNoHistory(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nhistory_blocks = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb.block("h", "x = 1", 0)
	sb.block("h", "x = 2", 0)
	r := sb.run("rewind", "--session", "h")
	if r.code != 1 || !strings.Contains(r.stderr, "no block of this session has a snapshot in the history (sandbox.history_blocks = 0 keeps none)") {
		t.Errorf("rewind without a history: %d %q", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(sb.folder("h"), "state", "history")); len(entries) > 0 {
		t.Errorf("history entries: %d", len(entries))
	}
}
