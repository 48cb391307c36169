package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/clitest"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// complete runs cobra's __complete for args and returns its candidates
// (the directive line left out).
func complete(t *testing.T, s Streams, args ...string) []string {
	t.Helper()
	var out strings.Builder
	s.Out = &out
	if code := Main(context.Background(), append([]string{"__complete"}, args...), s); code != 0 {
		t.Fatalf("__complete %q: status %d", args, code)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
			got = append(got, l)
		}
	}
	return got
}

// TestCompleteSessionsAndAttachments: --session offers the sessions of the
// workspace named (not another workspace's), and `attachment get` the
// session's filenames and version ids.
func TestCompleteSessionsAndAttachments(t *testing.T) {
	s, _, _ := clitest.Streams(t, nil)
	ws, _ := filepath.EvalSymlinks(s.Dir)
	root := s.Layout().Sessions()
	for _, m := range []session.Meta{{Name: "default", Workspace: ws}, {Name: "analysis", Workspace: ws}, {Name: "elsewhere", Workspace: t.TempDir()}} {
		if _, err := session.Create(root, m); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(complete(t, s, "sandbox", "run", "--session", ""), " "); got != "analysis default" {
		t.Errorf("--session completes to %q, want the workspace's two sessions", got)
	}
	if got := complete(t, s, "sandbox", "stop", "--session", "an"); len(got) != 1 || got[0] != "analysis" {
		t.Errorf("--session an completes to %q", got)
	}

	m := session.Meta{Name: "analysis", Workspace: ws}
	c := &client.Session{Folder: session.Find(root, m), Meta: m}
	var ids []string
	for _, text := range []string{"one", "two"} {
		d, err := c.Attach(attachments.New{Filename: "notes.md"}, strings.NewReader(text), attachments.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	got := complete(t, s, "sandbox", "attachment", "get", "--session", "analysis", "")
	want := []string{"notes.md\tlatest of 2 version(s)", ids[1] + "\tnotes.md v2", ids[0] + "\tnotes.md v1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("attachment get completes to %q, want %q", got, want)
	}
	if got := complete(t, s, "sandbox", "attachment", "get", "--session", "default", ""); len(got) != 0 {
		t.Errorf("a session without attachments completes to %q", got)
	}
}

// TestSandboxHelpNamesTheREPL: `vis-agent sandbox --help` says what the
// bare command does on a terminal.
func TestSandboxHelpNamesTheREPL(t *testing.T) {
	s, out, _ := clitest.Streams(t, nil)
	if code := Main(context.Background(), []string{"sandbox", "--help"}, s); code != 0 {
		t.Fatalf("status %d", code)
	}
	if !strings.Contains(out.String(), "On a terminal, vis-agent sandbox with no subcommand opens the REPL") {
		t.Errorf("sandbox --help does not name the REPL:\n%s", out)
	}
}
