package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// fixture is a workspace (writable root), a read-only root and a secret
// file outside both, with symlinks that lead out.
type fixture struct {
	a              Access
	ws, ro, secret string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	ws, ro, out := filepath.Join(base, "ws"), filepath.Join(base, "ro"), filepath.Join(base, "outside")
	testenv.WriteTree(t, base, map[string]string{
		"ws/a.txt":       "one\ntwo\nthree\n",
		"ro/lib.txt":     "read only\n",
		"outside/secret": "TOPSECRET\n",
		"outside/sub/":   "",
	})
	for link, target := range map[string]string{
		"ws/escape":     filepath.Join(out, "secret"),
		"ws/escape-dir": filepath.Join(out, "sub"),
		"ws/inside":     filepath.Join(ws, "a.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return fixture{
		a:  Access{Workspace: ws, ReadWrite: []string{ws}, ReadOnly: []string{ro}},
		ws: ws, ro: ro, secret: filepath.Join(out, "secret"),
	}
}

// wantErr fails unless err holds every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one with %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
}

func TestCat(t *testing.T) {
	f := newFixture(t)
	r, err := Cat(context.Background(), f.a, "a.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "    1\tone\n    2\ttwo\n    3\tthree\n" || r.Total != 3 || r.Next != 0 || r.Note != "" {
		t.Fatalf("cat: %#v", r)
	}
	r, err = Cat(context.Background(), f.a, "a.txt", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "    2\ttwo\n" || r.Next != 2 || !strings.Contains(r.Note, `cat("a.txt", offset=2)`) {
		t.Fatalf("cat part: %#v", r)
	}
	if r, err = Cat(context.Background(), f.a, "a.txt", 9, 0); err != nil || !strings.Contains(r.Note, "past the end") {
		t.Fatalf("cat past the end: %#v %v", r, err)
	}
	if r, err = Cat(context.Background(), f.a, "inside", 0, 0); err != nil || r.Total != 3 {
		t.Fatalf("cat through a symlink inside the roots: %#v %v", r, err)
	}
	if r, err = Cat(context.Background(), f.a, filepath.Join(f.ro, "lib.txt"), 0, 0); err != nil || r.Total != 1 {
		t.Fatalf("cat in the read-only root: %#v %v", r, err)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}

	_, err = Cat(context.Background(), f.a, "missing.txt", 0, 0)
	wantErr(t, err, "no such file: missing.txt")
	_, err = Cat(context.Background(), f.a, ".", 0, 0)
	wantErr(t, err, "is a directory")
	_, err = Cat(context.Background(), f.a, "a.txt", -1, 0)
	wantErr(t, err, "negative")
	_, err = Cat(context.Background(), f.a, f.secret, 0, 0)
	wantErr(t, err, "outside the session's roots: "+f.secret)
	_, err = Cat(context.Background(), f.a, "escape", 0, 0)
	wantErr(t, err, "outside the session's roots: escape (resolves to "+f.secret+")")
	_, err = Cat(context.Background(), f.a, "../outside/secret", 0, 0)
	wantErr(t, err, "outside the session's roots")
	_, err = Cat(context.Background(), f.a, "escape-dir/../secret", 0, 0)
	wantErr(t, err, "outside the session's roots")
	if err := os.Symlink("loop", filepath.Join(f.ws, "loop")); err != nil {
		t.Fatal(err)
	}
	_, err = Cat(context.Background(), f.a, "loop", 0, 0)
	wantErr(t, err, "too many levels of symbolic links")
	// A symlink swapped in after the check is not followed.
	_, err = openNoSymlinks(filepath.Join(f.ws, "inside"), os.O_RDONLY)
	wantErr(t, err, "too many levels of symbolic links")
	_, err = Cat(context.Background(), f.a, "/etc/passwd", 0, 0)
	wantErr(t, err, "outside the session's roots: /etc/passwd")

	_, err = Cat(context.Background(), Access{Workspace: "ws", ReadWrite: []string{"/"}}, "a.txt", 0, 0)
	wantErr(t, err, "no absolute workspace")
	// Without the jail the same file reads.
	open := f.a
	open.Unconfined = true
	if r, err := Cat(context.Background(), open, "escape", 0, 0); err != nil || !strings.Contains(r.Text, "TOPSECRET") {
		t.Fatalf("unconfined cat: %#v %v", r, err)
	}
}

func TestCatLimits(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString(strings.Repeat("é", 3000) + "\n") // a long line of 2-byte runes
	b.WriteString("no newline at the end")
	write(t, filepath.Join(f.ws, "long.txt"), b.String())
	r, err := Cat(context.Background(), f.a, "long.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != DefaultCatLines || r.Total != 2502 || r.Next != 2000 || !strings.Contains(r.Note, "lines 1-2000 of 2502") {
		t.Fatalf("default limit: lines %d total %d next %d note %q", r.Lines, r.Total, r.Next, r.Note)
	}
	r, err = Cat(context.Background(), f.a, "long.txt", 2500, 0)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSuffix(r.Text, "\n"), "\n")
	if len(rows) != 2 || !strings.HasSuffix(rows[0], "é … [4000 bytes cut]") || rows[1] != " 2502\tno newline at the end" {
		t.Fatalf("long line: %q", rows)
	}
	if !strings.Contains(r.Note, "1 long lines cut") {
		t.Fatalf("note: %q", r.Note)
	}

	// The byte cap stops a file of long lines before the line limit.
	write(t, filepath.Join(f.ws, "wide.txt"), strings.Repeat(strings.Repeat("x", 1500)+"\n", 1000))
	r, err = Cat(context.Background(), f.a, "wide.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Text) > MaxCatBytes || r.Lines >= 1000 || r.Next != r.Lines || !strings.Contains(r.Note, fmt.Sprintf("offset=%d", r.Lines)) {
		t.Fatalf("byte cap: %d bytes, %d lines, note %q", len(r.Text), r.Lines, r.Note)
	}

	// A line longer than the read buffer.
	write(t, filepath.Join(f.ws, "huge-line.txt"), "a\n"+strings.Repeat("z", 200000)+"\nb\n")
	r, err = Cat(context.Background(), f.a, "huge-line.txt", 0, 0)
	if err != nil || r.Total != 3 || !strings.Contains(r.Text, "    2\t"+strings.Repeat("z", MaxLineBytes)+" … [198000 bytes cut]\n    3\tb\n") {
		t.Fatalf("huge line: %v %.300q", err, r.Text)
	}
	write(t, filepath.Join(f.ws, "bin"), "PK\x00\x01rest")
	_, err = Cat(context.Background(), f.a, "bin", 0, 0)
	wantErr(t, err, "binary file: bin (8 bytes)")
	write(t, filepath.Join(f.ws, "empty"), "")
	if r, err := Cat(context.Background(), f.a, "empty", 0, 0); err != nil || r.Note != "empty file" {
		t.Fatalf("empty: %#v %v", r, err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGrep(t *testing.T) {
	f := newFixture(t)
	testenv.WriteTree(t, f.ws, map[string]string{
		".gitignore":     "*.log\n/build/\n!keep.log\nsub/gen?.go\n",
		"main.go":        "package main\n// TODO: one\n",
		"keep.log":       "TODO kept\n",
		"drop.log":       "TODO dropped\n",
		"build/out.go":   "TODO built\n",
		"sub/build/x.go": "TODO not top build\n",
		"sub/gen1.go":    "TODO generated\n",
		"sub/.gitignore": "local.txt\n",
		"sub/local.txt":  "TODO local\n",
		"sub/other.txt":  "TODO other\n",
		".git/config":    "TODO git\n",
		".hidden":        "TODO hidden\n",
	})
	write(t, filepath.Join(f.ws, "image.bin"), "TODO\x00binary")
	r, err := Grep(context.Background(), f.a, "TODO", "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range r.Matches {
		got = append(got, fmt.Sprintf("%s:%d", m.File, m.Line))
	}
	want := ".hidden:1 keep.log:1 main.go:2 sub/build/x.go:1 sub/other.txt:1"
	if strings.Join(got, " ") != want {
		t.Fatalf("grep rows %q, want %q\n%s", got, want, r.Text)
	}
	if r.Binary != 1 || !strings.Contains(r.Text, "main.go:2:// TODO: one\n") || !strings.Contains(r.Note, "1 binary files skipped: image.bin") {
		t.Fatalf("grep: %#v", r)
	}

	// From a subfolder, the parent's .gitignore still applies.
	r, err = Grep(context.Background(), f.a, "TODO", "sub", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 2 || r.Matches[0].File != "sub/build/x.go" {
		t.Fatalf("grep sub: %s", r.Text)
	}
	// A glob on names, and one on paths.
	if r, err = Grep(context.Background(), f.a, "TODO", "", "*.txt", 0); err != nil || r.Total != 1 || r.Matches[0].File != "sub/other.txt" {
		t.Fatalf("glob: %#v %v", r, err)
	}
	if r, err = Grep(context.Background(), f.a, "TODO", "", "sub/*/*.go", 0); err != nil || r.Total != 1 {
		t.Fatalf("path glob: %#v %v", r, err)
	}
	// One file, named explicitly, is searched even when ignored.
	if r, err = Grep(context.Background(), f.a, "(?i)todo", "drop.log", "", 0); err != nil || r.Total != 1 {
		t.Fatalf("one file: %#v %v", r, err)
	}
	// The limit keeps the first rows and counts the rest.
	if r, err = Grep(context.Background(), f.a, "TODO", "", "", 2); err != nil || len(r.Matches) != 2 || r.Total != 5 || !strings.Contains(r.Note, "3 more matching lines not shown") {
		t.Fatalf("limit: %#v %v", r, err)
	}
	if r, err = Grep(context.Background(), f.a, "nothing-like-this", "", "", 0); err != nil || len(r.Matches) != 0 || !strings.Contains(r.Note, "no match") {
		t.Fatalf("no match: %#v %v", r, err)
	}

	// A match far into a long line shows around the match.
	write(t, filepath.Join(f.ws, "min.js"), strings.Repeat("x", 5000)+"NEEDLE"+strings.Repeat("y", 5000)+"\n")
	r, err = Grep(context.Background(), f.a, "NEEDLE", "min.js", "", 0)
	if err != nil || len(r.Matches) != 1 || !strings.HasPrefix(r.Matches[0].Text, "…x") || !strings.Contains(r.Matches[0].Text, "NEEDLE") ||
		!strings.HasSuffix(r.Matches[0].Text, "y…") || len(r.Matches[0].Text) > grepShowBytes+10 {
		t.Fatalf("long line: %#v %v", r.Matches, err)
	}
	_, err = Grep(context.Background(), f.a, "a(b", "", "", 0)
	wantErr(t, err, `bad regex "a(b": missing closing ): `)
	_, err = Grep(context.Background(), f.a, "x", "", "[", 0)
	wantErr(t, err, `bad glob "["`)
	_, err = Grep(context.Background(), f.a, "x", "nowhere", "", 0)
	wantErr(t, err, "no such file or folder: nowhere")
	_, err = Grep(context.Background(), f.a, "x", "image.bin", "", 0)
	wantErr(t, err, "binary file: image.bin")
	_, err = Grep(context.Background(), f.a, "TOPSECRET", "escape-dir/..", "", 0)
	wantErr(t, err, "outside the session's roots")
	_, err = Grep(context.Background(), f.a, "root", "/etc", "", 0)
	wantErr(t, err, "outside the session's roots: /etc")
	// Symlinks inside the tree are not followed out of it.
	if r, err = Grep(context.Background(), f.a, "TOPSECRET", "", "", 0); err != nil || r.Total != 0 {
		t.Fatalf("grep followed a symlink out: %#v %v", r, err)
	}
}

func TestGitignoreRules(t *testing.T) {
	rules := []ignoreFile{{dir: "/r", rules: parseIgnore([]string{
		"# comment", "", "*.o", "!keep.o", "/top.txt", "doc/*.html", "**/deep/x", "logs/**", "a/**/b",
		"trail\\ ", "\\#hash", "[abc].c", "[!z].d", "dir/",
	})}}
	for p, want := range map[string]bool{
		"/r/x.o": true, "/r/s/y.o": true, "/r/keep.o": false, "/r/top.txt": true, "/r/s/top.txt": false,
		"/r/doc/a.html": true, "/r/doc/s/a.html": false, "/r/s/doc/a.html": false,
		"/r/deep/x": true, "/r/q/w/deep/x": true, "/r/logs/a/b": true, "/r/a/b": true, "/r/a/x/y/b": true,
		"/r/trail ": true, "/r/#hash": true, "/r/a.c": true, "/r/d.c": false, "/r/a.d": true, "/r/z.d": false,
		"/r/dir": false, "/other/x.o": false, "/r/x.oo": false, "/r/comment": false,
	} {
		if got := ignored(rules, p, false); got != want {
			t.Errorf("ignored(%q) = %v, want %v", p, got, want)
		}
	}
	if !ignored(rules, "/r/s/dir", true) {
		t.Errorf("dir/ does not match a folder")
	}
}

func TestPatch(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.ws, "code.py")
	write(t, p, "a = 1\nb = 2\nc = 3\nb = 2\nd = 4\n")
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	r, err := Patch(f.a, "code.py", "c = 3\n", "c = 30\nc2 = 31\n")
	if err != nil {
		t.Fatal(err)
	}
	wantDiff := "--- a/code.py\n+++ b/code.py\n@@ -1,5 +1,6 @@\n a = 1\n b = 2\n-c = 3\n+c = 30\n+c2 = 31\n b = 2\n d = 4\n"
	if r.Diff != wantDiff {
		t.Fatalf("diff:\n%s\nwant:\n%s", r.Diff, wantDiff)
	}
	data, _ := os.ReadFile(p)
	if string(data) != "a = 1\nb = 2\nc = 30\nc2 = 31\nb = 2\nd = 4\n" {
		t.Fatalf("content %q", data)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o751 {
		t.Fatalf("mode %v", st.Mode())
	}
	entries, _ := os.ReadDir(f.ws)
	for _, e := range entries {
		if strings.Contains(e.Name(), "vis-patch") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}

	_, err = Patch(f.a, "code.py", "b = 2\n", "B\n")
	wantErr(t, err, "old text found 2 times (lines 2, 5); add context to make it unique")
	_, err = Patch(f.a, "code.py", "zzz", "y")
	wantErr(t, err, "old text not found (it must match exactly, whitespace included)")
	if strings.Contains(err.Error(), "line") {
		t.Errorf("a text nowhere near names a line: %v", err)
	}
	_, err = Patch(f.a, "code.py", "b  =  2\n", "y")
	wantErr(t, err, `its first line is line 2 with other whitespace: "b = 2"`)
	_, err = Patch(f.a, "code.py", "", "y")
	wantErr(t, err, "old is empty")
	_, err = Patch(f.a, "missing.py", "a", "b")
	wantErr(t, err, "no such file: missing.py")
	_, err = Patch(f.a, ".", "a", "b")
	wantErr(t, err, "is a directory")
	_, err = Patch(f.a, filepath.Join(f.ro, "lib.txt"), "read", "write")
	wantErr(t, err, "read-only root: "+filepath.Join(f.ro, "lib.txt"))
	_, err = Patch(f.a, "escape", "TOPSECRET", "changed")
	wantErr(t, err, "outside the session's roots: escape")
	_, err = Patch(f.a, "../outside/secret", "TOPSECRET", "changed")
	wantErr(t, err, "outside the session's roots")
	if data, _ := os.ReadFile(f.secret); string(data) != "TOPSECRET\n" {
		t.Fatalf("secret changed: %q", data)
	}
	write(t, filepath.Join(f.ws, "tail.txt"), "x\nlast")
	r, err = Patch(f.a, "tail.txt", "last", "final")
	if err != nil || !strings.Contains(r.Diff, "-last\n\\ No newline at end of file\n+final\n\\ No newline at end of file\n") {
		t.Fatalf("no newline at the end: %q %v", r.Diff, err)
	}
	// Through a symlink inside the roots, the target changes and the link stays.
	if _, err := Patch(f.a, "inside", "two", "TWO"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(data) != "one\nTWO\nthree\n" {
		t.Fatalf("a.txt: %q", data)
	}
	if st, err := os.Lstat(filepath.Join(f.ws, "inside")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", st, err)
	}
}

// TestErrorKinds: every failure a caller maps to a Python exception is of
// its kind by errors.Is, whatever its message says.
func TestErrorKinds(t *testing.T) {
	f := newFixture(t)
	os.Mkdir(filepath.Join(f.ws, "dir"), 0o755)
	hidden := f.a
	hidden.Hidden = []string{filepath.Join(f.ws, "dir")}
	catErr := func(a Access, p string) error { _, err := Cat(context.Background(), a, p, 0, 0); return err }
	grepErr := func(a Access, p string) error { _, err := Grep(context.Background(), a, "x", p, "", 0); return err }
	patchErr := func(a Access, p string) error { _, err := Patch(a, p, "one", "1"); return err }
	kinds := []struct {
		name string
		err  error
		kind error
	}{
		{"cat a missing file", catErr(f.a, "missing.txt"), fs.ErrNotExist},
		{"grep a missing folder", grepErr(f.a, "missing"), fs.ErrNotExist},
		{"patch a missing file", patchErr(f.a, "missing.txt"), fs.ErrNotExist},
		{"cat outside the roots", catErr(f.a, f.secret), fs.ErrPermission},
		{"cat through a symlink out", catErr(f.a, "escape"), fs.ErrPermission},
		{"grep a hidden folder", grepErr(hidden, "dir"), fs.ErrPermission},
		{"patch a read-only root", patchErr(f.a, filepath.Join(f.ro, "lib.txt")), fs.ErrPermission},
		{"cat a folder", catErr(f.a, "dir"), syscall.EISDIR},
		{"patch a folder", patchErr(f.a, "dir"), syscall.EISDIR},
	}
	for _, k := range kinds {
		if !errors.Is(k.err, k.kind) {
			t.Errorf("%s: %v is not %v", k.name, k.err, k.kind)
		}
	}
	_, err := Grep(context.Background(), f.a, "(", ".", "", 0)
	for _, kind := range []error{fs.ErrNotExist, fs.ErrPermission, syscall.EISDIR} {
		if errors.Is(err, kind) {
			t.Errorf("a bad regex (%v) is %v", err, kind)
		}
	}
}

// TestBoundedReads: what the session's code planted for the host's tools
// is read within bounds: a .gitignore that is a FIFO, a link or over the
// limits is not applied (and said so), a grep asking for more rows than
// MaxGrepRows gets that many, cat and grep read a file's first
// MaxScanBytes, and a cancelled call stops.
func TestBoundedReads(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	var many strings.Builder
	for i := 0; i < maxIgnoreRules+1; i++ {
		fmt.Fprintf(&many, "p%d\n", i)
	}
	testenv.WriteTree(t, f.ws, map[string]string{
		"fifo/a.txt": "hit\n", "link/a.txt": "hit\n", "large/a.txt": "hit\n", "many/a.txt": "hit\n",
		"large/.gitignore": strings.Repeat("#", maxIgnoreBytes+1), "many/.gitignore": many.String(),
		"rows.txt": strings.Repeat("hit\n", MaxGrepRows+5),
	})
	if err := syscall.Mkfifo(filepath.Join(f.ws, "fifo", ".gitignore"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(f.secret, filepath.Join(f.ws, "link", ".gitignore"))
	for _, dir := range []string{"fifo", "link", "large", "many"} {
		r, err := Grep(bg, f.a, "hit", dir, "", 0)
		if err != nil || r.Total != 1 || !strings.Contains(r.Note, "1 .gitignore files not applied") {
			t.Errorf("%s: %+v %v", dir, r, err)
		}
	}
	r, err := Grep(bg, f.a, "hit", "rows.txt", "", 1<<30)
	if err != nil || len(r.Matches) != MaxGrepRows || r.Total != MaxGrepRows+5 || !strings.Contains(r.Note, "at most 10000 are") {
		t.Errorf("rows: %d of %d, %q %v", len(r.Matches), r.Total, r.Note, err)
	}

	big := filepath.Join(f.ws, "big.txt")
	w, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 1023) + "\n"
	for i := 0; i < MaxScanBytes/1024+10; i++ {
		w.WriteString(line)
	}
	w.WriteString("needle\n")
	w.Close()
	if r, err := Grep(bg, f.a, "needle", "big.txt", "", 0); err != nil || r.Total != 0 || !strings.Contains(r.Note, "first 64 MiB only") {
		t.Errorf("grep past the scan: %+v %v", r.Note, err)
	}
	if r, err := Cat(bg, f.a, "big.txt", 0, 1); err != nil || r.Total != MaxScanBytes/1024 || !strings.Contains(r.Note, "only the first 64 MiB were read") {
		t.Errorf("cat past the scan: %d %q %v", r.Total, r.Note, err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := Grep(ctx, f.a, "needle", "", "", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled grep: %v", err)
	}
	if _, err := Cat(ctx, f.a, "big.txt", 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled cat: %v", err)
	}
}
