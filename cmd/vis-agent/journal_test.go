package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSandboxJournal: blocks of `sandbox run` and of an MCP client are in
// the session's journal, shown by `sandbox log` (text, --json, -n,
// --follow), the session_log resource and read_session() in a block; the
// jailed code can neither write nor read the journal's file; rm deletes
// it.
func TestSandboxJournal(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			sb := newSandbox(t, py)
			sb.block("default", "x = 41", 0)
			sb.block("default", "print(x + 1)", 0)
			sb.block("default", "1/0", 1)
			sb.block("default", `print("\x1b]52;c;QUJD\x07colour")`, 0)
			c := connectMCP(t, sb)
			c.python("print('from mcp')", false)

			r := sb.run("log")
			if r.code != 0 {
				t.Fatalf("log: %d %s", r.code, r.stderr)
			}
			contains(t, "sandbox log", r.stdout, "run: ", ">>> print(x + 1)\n42\n", "ZeroDivisionError: division by zero",
				"mcp: vis-agent-test", "from mcp", `\x1b]52;c;QUJD\x07colour`)
			if strings.Contains(r.stdout, "\x1b]52") {
				t.Errorf("sandbox log passed an escape sequence of the session's output to the terminal")
			}
			r = sb.run("log", "-n", "1", "--json")
			var e struct {
				Client, Code, Output, Status string
				ClientID                     string `json:"client_id"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || strings.Count(r.stdout, "\n") != 1 {
				t.Fatalf("log -n 1 --json: %v\n%s", err, r.stdout)
			}
			if e.Client != "mcp" || e.ClientID != "vis-agent-test" || e.Output != "from mcp\n" || e.Status != "ok" {
				t.Errorf("log -n 1 --json: %+v", e)
			}

			res, err := c.readResource("vis-session://default/log")
			if err != nil || !strings.Contains(res.Text, ">>> print(x + 1)") || !strings.Contains(res.Text, "mcp: vis-agent-test") {
				t.Errorf("session_log resource: %v\n%v", err, res)
			}

			out := sb.block("default", "r = read_session(3)\nprint(r[-1].client, r[-1].code)\nprint(r[0].error.type)\nprint(r)", 0).stdout
			contains(t, "read_session", out, "mcp print('from mcp')\nZeroDivisionError\n", "#3 run: ")

			// The journal is the host's: the jailed code reaches it neither
			// way.
			journal := filepath.Join(sb.folder("default"), "journal.db")
			out = sb.block("default", fmt.Sprintf(`for mode in ("ab", "rb"):
    try:
        open(%q, mode)
        print(mode, "opened")
    except OSError as e:
        print(mode, type(e).__name__)`, journal), 0).stdout
			if strings.Contains(out, "opened") {
				t.Errorf("the jailed code opened the journal:\n%s", out)
			}
			if st, err := os.Stat(journal); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("journal file: %v %v", st.Mode(), err)
			}

			if r := sb.run("rm", "--force", "--session", "default"); r.code != 0 {
				t.Fatalf("rm: %s", r.stderr)
			}
			if _, err := os.Stat(journal); !os.IsNotExist(err) {
				t.Errorf("the journal outlived rm: %v", err)
			}
			if r := sb.run("log"); r.code != 1 || !strings.Contains(r.stderr, "no session") {
				t.Errorf("log of a removed session: %d %q", r.code, r.stderr)
			}
		})
	}
}

// TestSandboxLogFollow: `sandbox log --follow` shows a block another
// client runs, and Ctrl-C ends it with status 0.
func TestSandboxLogFollow(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, oldestAndNewest(t)[0])
	sb.block("default", "print('before')", 0)
	cmd := sb.command("log", "--follow", "-n", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	sb.block("default", "print('followed')", 0)
	deadline := time.After(20 * time.Second)
	for seen := false; !seen; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("log --follow ended")
			}
			seen = l == "followed"
		case <-deadline:
			t.Fatal("log --follow did not show the block")
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("log --follow after Ctrl-C: %v", err)
	}
}
