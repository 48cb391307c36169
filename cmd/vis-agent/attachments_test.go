package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
)

// attachTo stores data in session name of sb as a block's attach() does
// (the store is shared by processes; this test process is one more).
func (sb *sandbox) attachTo(name, filename, data string, commentable bool) attachments.Descriptor {
	sb.t.Helper()
	st, err := attachments.Open(filepath.Join(sb.home, "sandbox", "attachments"))
	if err != nil {
		sb.t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Attach(attachments.New{Session: filepath.Base(sb.folder(name)), SessionName: name, Block: 1,
		Filename: filename, Commentable: commentable}, strings.NewReader(data), attachments.Limits{})
	if err != nil {
		sb.t.Fatal(err)
	}
	return d
}

func (sb *sandbox) ok(args ...string) result {
	sb.t.Helper()
	r := sb.run(args...)
	if r.code != 0 {
		sb.t.Fatalf("%v: status %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// failsWith runs args and requires status code and one line on stderr
// holding want.
func (sb *sandbox) failsWith(code int, want string, args ...string) {
	sb.t.Helper()
	r := sb.run(args...)
	if r.code != code || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, want) {
		sb.t.Errorf("%v: status %d, stderr %q: want %d and one line with %q", args, r.code, r.stderr, code, want)
	}
}

// TestSandboxAttachments: listing a session's attachments, writing one
// out, commenting, errors, and rm deleting them, through the binary.
func TestSandboxAttachments(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	sb.block("s", "pass", 0)
	if r := sb.ok("attachments", "--session", "s"); r.stdout != "session \"s\" has no attachments\n" {
		t.Errorf("no attachments: %q", r.stdout)
	}
	if r := sb.ok("attachments", "--session", "s", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("no attachments, JSON: %q", r.stdout)
	}
	v1 := sb.attachTo("s", "PLAN.md", "# plan one\n", true)
	v2 := sb.attachTo("s", "PLAN.md", "# plan two\n", false)
	img := sb.attachTo("s", "", "\x89PNG\r\n\x1a\n"+strings.Repeat("\x00", 3000), false)

	// The table, newest first; the session need not run.
	sb.ok("stop", "--session", "s")
	r := sb.ok("attachments", "--session", "s")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "ID FILENAME VERSION KIND SIZE CREATED COMMENTABLE" {
		t.Fatalf("table:\n%s", r.stdout)
	}
	for i, want := range [][]string{
		{img.ID, img.Filename, "1", "image", "2.9 KiB", "no"},
		{v2.ID, "PLAN.md", "2", "text", "11 B", "no"},
		{v1.ID, "PLAN.md", "1", "text", "11 B", "yes"},
	} {
		f := strings.Fields(lines[i+1])
		// ID FILENAME VERSION KIND SIZE(2) DATE TIME COMMENTABLE
		if len(f) != 9 || f[0] != want[0] || f[1] != want[1] || f[2] != want[2] || f[3] != want[3] ||
			f[4]+" "+f[5] != want[4] || f[8] != want[5] {
			t.Errorf("row %d: %q, want %q", i+1, lines[i+1], want)
		}
	}
	var list []attachments.Descriptor
	r = sb.ok("attachments", "--session", "s", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 3 {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if d := list[2]; d.ID != v1.ID || d.Version != 1 || d.MediaType != "text/markdown" || d.SHA256 != v1.SHA256 ||
		d.Session != "s" || d.Block != 1 || !d.Commentable || !d.Created.Equal(v1.Created) {
		t.Errorf("--json descriptor %+v, want %+v", d, v1)
	}
	if !strings.Contains(r.stdout, `"media_type": "image/png"`) {
		t.Errorf("--json keys:\n%s", r.stdout)
	}

	// From another folder, --workspace names the session's.
	elsewhere := t.TempDir()
	for _, args := range [][]string{
		{"attachments", "--session", "s", "--workspace", sb.ws},
		{"attachment", "get", "--session", "s", "--workspace", sb.ws, "PLAN.md", "-o", "-"},
		{"attachment", "comment", "--session", "s", "--workspace", sb.ws, "PLAN.md", "--version", "1", "from elsewhere"},
	} {
		cmd := sb.command(args...)
		cmd.Dir = elsewhere
		if out, err := cmd.CombinedOutput(); err != nil || len(out) == 0 {
			t.Errorf("%v from another folder: %v\n%s", args, err, out)
		}
	}

	// get: the latest to its filename here, never over a file without
	// --force; -o - to stdout; -o FILE; -o FOLDER; by id.
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(sb.ws, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sb.ok("attachment", "get", "--session", "s", "PLAN.md")
	if got := read("PLAN.md"); got != "# plan two\n" {
		t.Errorf("get wrote %q", got)
	}
	os.WriteFile(filepath.Join(sb.ws, "PLAN.md"), []byte("mine"), 0o644)
	sb.failsWith(1, "exists: give --force", "attachment", "get", "--session", "s", "PLAN.md", "--version", "1")
	if got := read("PLAN.md"); got != "mine" {
		t.Errorf("a refused get changed the file: %q", got)
	}
	sb.ok("attachment", "get", "--session", "s", "PLAN.md", "--version", "1", "--force")
	if got := read("PLAN.md"); got != "# plan one\n" {
		t.Errorf("get --force wrote %q", got)
	}
	if r := sb.ok("attachment", "get", "--session", "s", "PLAN.md", "--version", "-2", "-o", "-"); r.stdout != "# plan one\n" {
		t.Errorf("get --version -2 -o -: %q", r.stdout)
	}
	sb.ok("attachment", "get", "--session", "s", "PLAN.md", "-o", "out.md")
	sb.ok("attachment", "get", "--session", "s", v1.ID, "-o", "out.md")
	if got := read("out.md"); got != "# plan one\n" {
		t.Errorf("get by id -o out.md: %q", got)
	}
	os.Mkdir(filepath.Join(sb.ws, "dir"), 0o755)
	sb.ok("attachment", "get", "--session", "s", img.ID, "-o", "dir")
	if got := read(filepath.Join("dir", img.Filename)); len(got) != 3008 {
		t.Errorf("get -o dir wrote %d bytes", len(got))
	}

	// comment: on the commentable version; refused, saying why, on the
	// read-only one.
	if r := sb.ok("attachment", "comment", "--session", "s", "PLAN.md", "--version", "1", "ship it"); r.stdout != "comment 2 added to PLAN.md version 1\n" {
		t.Errorf("comment: %q", r.stdout)
	}
	sb.failsWith(1, "read-only (attached without commentable=True)", "attachment", "comment", "--session", "s", "PLAN.md", "--version", "2", "no")
	sb.failsWith(2, "the comment's TEXT is empty", "attachment", "comment", "--session", "s", "PLAN.md", "--version", "1", " ")
	sb.failsWith(2, "comment needs --version N", "attachment", "comment", "--session", "s", "PLAN.md", "text")
	st, err := attachments.Open(filepath.Join(sb.home, "sandbox", "attachments"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if d, err := st.Get(filepath.Base(sb.folder("s")), "PLAN.md", 1); err != nil || len(d.Comments) != 2 || d.Comments[1].Text != "ship it" {
		t.Errorf("the comment in the store: %+v, %v", d.Comments, err)
	}

	// Unknown names and versions, bad command lines: one line each.
	sb.failsWith(1, `no attachment "PLAN.mdx" in this session; nearest: PLAN.md`, "attachment", "get", "--session", "s", "PLAN.mdx")
	sb.failsWith(1, `no version 5 of attachment "PLAN.md" in this session; it has versions 1, 2`, "attachment", "get", "--session", "s", "PLAN.md", "--version", "5")
	sb.failsWith(1, `no session "nope"`, "attachments", "--session", "nope")
	sb.failsWith(2, "invalid session name", "attachments", "--session", "bad name")
	sb.failsWith(2, "give the attachment's ID or FILENAME", "attachment", "get", "--session", "s")
	sb.failsWith(2, "then the comment's TEXT", "attachment", "comment", "--session", "s", "PLAN.md", "--version", "1")
	sb.failsWith(2, "invalid argument", "attachment", "get", "--session", "s", "PLAN.md", "--version", "x")
	sb.failsWith(2, "unknown command", "attachment", "put")

	// rm deletes the session's attachments and the blobs no other session
	// uses.
	sb.block("t", "pass", 0)
	shared := sb.attachTo("t", "same.md", "# plan two\n", false)
	key := filepath.Base(sb.folder("s"))
	sb.ok("rm", "--session", "s")
	if list, err := st.List(key); err != nil || len(list) != 0 {
		t.Errorf("the removed session's rows: %v %v", list, err)
	}
	blobs, _ := filepath.Glob(filepath.Join(sb.home, "sandbox", "attachments", "blobs", "??", "*"))
	if len(blobs) != 1 || filepath.Base(blobs[0]) != shared.SHA256[2:] {
		t.Errorf("blobs after rm: %v", blobs)
	}
	if r := sb.ok("attachment", "get", "--session", "t", "same.md", "-o", "-"); r.stdout != "# plan two\n" {
		t.Errorf("the other session's attachment after rm: %q", r.stdout)
	}
	sb.block("s", "pass", 0) // a new session "s" has none
	if r := sb.ok("attachments", "--session", "s"); r.stdout != "session \"s\" has no attachments\n" {
		t.Errorf("after rm: %q", r.stdout)
	}
}
