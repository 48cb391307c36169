package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// module is a Python file the tests edit.
const module = `import os


def area(w, h):
    return w * h


def scaled(x, factor=2):
    values = [x * factor for _ in range(3)]
    return sum(values)
`

// writeFile writes a file of the workspace.
func (sb *sandbox) writeFile(name, text string) {
	sb.t.Helper()
	if err := os.WriteFile(filepath.Join(sb.ws, name), []byte(text), 0o644); err != nil {
		sb.t.Fatal(err)
	}
}

// TestSandboxPatchChecks: patch() on checked files, on the oldest and the
// newest CPython: an edit that drops a closing bracket is repaired and
// reported, one beyond repair leaves the file byte-identical and raises
// with Python's message and a caret, a JSON edit that breaks the file is
// refused (check=False writes it), an edit of a file that did not compile
// is written and said to be still invalid, and versions count the writes.
func TestSandboxPatchChecks(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			write := sb.writeFile
			read := func(name string) string {
				data, err := os.ReadFile(filepath.Join(sb.ws, name))
				if err != nil {
					t.Fatal(err)
				}
				return string(data)
			}
			write("m.py", module)
			write("conf.json", `{"name": "x", "n": 1}`)
			write("broken.py", "x = (1,\n")
			minor := strings.Join(strings.Split(py.Version.String(), ".")[:2], ".")

			r := sb.block("p", `
r = patch("m.py", "sum(values)", "sum(values")
print("repaired", r.checked, r.corrections, r.version)
print(repr(r))
r = patch("m.py", "w * h", "w * h * 1")
print("valid", r.checked, r.corrections, r.version, r.note)
try:
    patch("m.py", "return w * h * 1", "return w * h * 1 +")
except ValueError as e:
    print("refused:", e)
try:
    patch("conf.json", '"n": 1', '"n": 1,')
except ValueError as e:
    print("refused:", e)
r = patch("broken.py", "1,", "1, 2,")
print("still", r.checked, repr(r.invalid))
`, 0)
			contains(t, "patch", r.stdout,
				"repaired python "+minor+" [\"line 10: added ')' at column 22 to close '(' from line 10\"] 1",
				"checked as python "+minor+" and repaired before it was written: line 10: added ')'",
				"valid python "+minor+" [] 2 checked as python "+minor+"; version 2",
				"refused: patch m.py: the edit would make the file invalid Python (it compiled before), and the repair engine has no exact fix; nothing was written:\nSyntaxError: invalid syntax\n",
				"        return w * h * 1 +\n",
				"^",
				"refused: patch conf.json: the edit would make the file invalid JSON (it parsed before); nothing was written:\nline 1, column 22: invalid character '}'",
				"still python "+minor+" \"SyntaxError: line 1, column 5: '(' was never closed",
			)
			want := strings.Replace(module, "w * h", "w * h * 1", 1)
			if got := read("m.py"); got != want {
				t.Errorf("m.py after the patches:\n%s\nwant:\n%s", got, want)
			}
			if got := read("conf.json"); got != `{"name": "x", "n": 1}` {
				t.Errorf("a refused JSON patch wrote %q", got)
			}
			r = sb.block("p", `
r = patch("conf.json", '"n": 1', '"n": 1,', check=False)
print("unchecked", repr(r.checked), r.version)
r = patch("m.py", "factor=2", "factor=3")
print("again", r.version)
`, 0)
			contains(t, "patch check=False", r.stdout, "unchecked '' 1", "again 3")
			if got := read("conf.json"); got != `{"name": "x", "n": 1,}` {
				t.Errorf("check=False wrote %q", got)
			}
			// The versions outlive the host.
			sb.run("stop", "--session", "p")
			r = sb.block("p", `print("after a restart", patch("m.py", "factor=3", "factor=4").version)`, 0)
			contains(t, "versions after a restart", r.stdout, "after a restart 4")
		})
	}
}

// TestSandboxPatchAhead: the first checked edit of a Python file the
// session did not write compiles only the statements it touches, once the
// session's Python compiled the file ahead while idle: a file the
// workspace held when the session started, one cat() read and one the
// block's code read with open(). A file
// changed on disk since it was compiled ahead is compiled whole again: a
// file broken behind the session's back stays "still invalid" after an
// edit elsewhere in it (checked on the edited function alone, it would
// pass as valid). On the oldest and the newest CPython.
func TestSandboxPatchAhead(t *testing.T) {
	t.Parallel()
	var big strings.Builder
	for i := range 60 {
		fmt.Fprintf(&big, "\n\ndef f%d(x):\n    y = [x * %d for _ in range(3)]\n    return sum(y)\n", i, i)
	}
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			write := sb.writeFile
			// compiled ahead: waits until the session's Python compiled
			// the file ahead (it does between blocks, while idle).
			ahead := func(name string) {
				deadline := time.Now().Add(30 * time.Second)
				for {
					r := sb.block("a", "import vis_sandbox.ahead as _a\nprint(_a.key_of("+strconv.Quote(name)+") is not None)", 0)
					if strings.TrimSpace(r.stdout) == "True" {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s was not compiled ahead in 30 s", name)
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
			write("start.py", big.String())
			sb.block("a", `
import os
import vis_sandbox.checks as _c

def counted(path, old, new):
    """patch(), and whether it had the whole file compiled."""
    sizes, compile_file = [], _c.compile_file
    _c.compile_file = lambda data, name: sizes.append(len(data)) or compile_file(data, name)
    try:
        r = patch(path, old, new)
    finally:
        _c.compile_file = compile_file
    whole = any(n >= os.path.getsize(path) for n in sizes)
    print(path, "whole" if whole else "part", "invalid" if r.get("invalid") else "valid")
`, 0)
			ahead("start.py")
			write("read.py", big.String())
			write("opened.py", big.String())
			write("stale.py", module)
			sb.block("a", `cat("read.py"); cat("stale.py"); open("opened.py").read()`, 0)
			ahead("read.py")
			ahead("opened.py")
			ahead("stale.py")
			write("stale.py", strings.Replace(module, "for _ in range(3)]", "for _ in range(3)", 1))
			r := sb.block("a", `
counted("start.py", "x * 7 for", "x * 8 for")
counted("read.py", "x * 7 for", "x * 8 for")
counted("opened.py", "x * 7 for", "x * 8 for")
counted("stale.py", "return w * h", "return w * h * 2")
counted("start.py", "x * 9 for", "x * 10 for")
`, 0)
			contains(t, "first edits", r.stdout, "start.py part valid", "read.py part valid", "opened.py part valid",
				"stale.py whole invalid", "start.py part valid\n")
		})
	}
}

// TestSandboxBlockChecks: the files a block changed are checked after it,
// on the oldest and the newest CPython: a broken .py and .json file get a
// line at the end of the output (also when the block raised, and for a
// shell() command's writes), with the exact fix, not applied; the --json
// result carries them; an unchanged file is not reported again; files
// outside the workspace and symlinks are not read; sandbox.fix_files
// applies the fix.
func TestSandboxBlockChecks(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			minor := strings.Join(strings.Split(py.Version.String(), ".")[:2], ".")
			// Broken files outside the workspace, reachable through
			// symlinks in it: a file and a folder in the interpreter's
			// temp folder, which the block may write.
			sb.block("b", `print("started")`, 0)
			tmp := filepath.Join(sb.folder("b"), "tmp", "p"+strconv.Itoa(sb.record(sb.folder("b")).ChildPID))
			os.MkdirAll(filepath.Join(tmp, "dir"), 0o755)
			for link, target := range map[string]string{"link.py": filepath.Join(tmp, "target.py"), "linkdir": filepath.Join(tmp, "dir")} {
				if err := os.Symlink(target, filepath.Join(sb.ws, link)); err != nil {
					t.Fatal(err)
				}
			}

			r := sb.block("b", `
open("ok.py", "w").write("x = 1\n")
os.makedirs("pkg", exist_ok=True)
Path("pkg/bad.py").write_text("def f(:\n    return (1,\n")
open("data.json", "w").write('{"a": [1, 2}')
open("notes.txt", "w").write("(((")
open(`+strconv.Quote(filepath.Join(tmp, "outside.py"))+`, "w").write("x = (\n")
open("link.py", "w").write("y = (\n")
open("linkdir/z.py", "w").write("z = (\n")
open("fixable.py", "w").write("print('hi'\n")
fd = os.open("low.py", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"def g(:\n")
os.close(fd)
Path("tmp.txt").write_text("[1, 2")
os.replace("tmp.txt", "renamed.json")
print("done")
`, 0)
			contains(t, "after-block lines", r.stderr,
				"[file check] pkg/bad.py:1:7: invalid syntax (python "+minor+")",
				"[file check] data.json:1:12: invalid character '}' after array element (json)\n",
				"[file check] fixable.py:1:6: '(' was never closed (python "+minor+"); exact fix, not applied (sandbox.fix_files = true applies it): line 1: added ')' at column 11 to close '(' from line 1\n",
				"[file check] low.py:1:7: invalid syntax (python "+minor+")",
				"[file check] renamed.json:1:5: unexpected end of JSON input (json)\n")
			if !strings.HasSuffix(r.stderr, "\n") || strings.Count(r.stderr, "[file check]") != 5 {
				t.Errorf("want five lines, and nothing about ok.py, notes.txt, files outside the workspace or symlinks:\n%s", r.stderr)
			}
			if strings.Contains(r.stderr, "print('hi')") {
				t.Error("the fix was applied")
			}
			if data, _ := os.ReadFile(filepath.Join(sb.ws, "fixable.py")); string(data) != "print('hi'\n" {
				t.Errorf("fixable.py changed without fix_files: %q", data)
			}
			if data, _ := os.ReadFile(filepath.Join(tmp, "target.py")); string(data) != "y = (\n" {
				t.Errorf("the block did not write through the symlink: %q", data)
			}

			// Unchanged files are not reported again; a block that raises
			// still gets its lines; shell() commands' writes are found.
			r = sb.block("b", `print("nothing written")`, 0)
			if strings.Contains(r.stderr, "[file check]") {
				t.Errorf("unchanged files reported again:\n%s", r.stderr)
			}
			r = sb.block("b", `
open("pkg/bad.py", "w").write("x = [1,\n")
raise RuntimeError("after the write")
`, 1)
			contains(t, "a block that raised", r.stderr, "RuntimeError: after the write", "[file check] pkg/bad.py:1:5: '[' was never closed")
			r = sb.block("b", `print(shell("printf 'v = {\\n' > from_shell.py").exit)`, 0)
			contains(t, "a shell command's write", r.stderr, "[file check] from_shell.py:1:5: '{' was never closed")

			// The --json result carries them.
			v := sb.jsonBlock("b", `open("data.json", "w").write("{,}")`)
			checks, _ := v["checks"].([]any)
			if len(checks) != 1 {
				t.Fatalf("--json checks: %v", v)
			}
			c := checks[0].(map[string]any)
			if c["path"] != "data.json" || c["checked"] != "json" || c["line"] != 1.0 || c["column"] != 2.0 || !strings.Contains(c["message"].(string), "invalid character ','") {
				t.Errorf("--json check: %v", c)
			}

			// With sandbox.fix_files the exact fix is written.
			sb.run("stop", "--session", "b")
			if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nfix_files = true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r = sb.block("b", `open("fixable.py", "w").write("print('hi'\n")`, 0)
			contains(t, "fix_files", r.stderr, "[file check] fixable.py:1:6: '(' was never closed (python "+minor+"); fixed (sandbox.fix_files): line 1: added ')'")
			if data, _ := os.ReadFile(filepath.Join(sb.ws, "fixable.py")); string(data) != "print('hi')\n" {
				t.Errorf("fix_files wrote %q", data)
			}
		})
	}
}

// TestSandboxCheckCommand: vis-agent sandbox check's statuses and lines,
// and --fix, on the oldest and the newest CPython.
func TestSandboxCheckCommand(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			testenv.WriteTree(t, sb.ws, map[string]string{
				"good.py": "x = 1\n", "bad.py": "x = (1,\ny = 2\n", "worse.py": "def f(:\n", "c.json": `{"a": 1,}`,
				"ok.yaml": "a: 1\n", "bad.toml": "a = 1\na = 2\n", "notes.txt": "(((",
			})
			if r := sb.run("check", "good.py", "ok.yaml", "notes.txt"); r.code != 0 || r.stdout != "" {
				t.Errorf("valid files: status %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r := sb.run("check", "good.py", "bad.py", "worse.py", "c.json", "bad.toml")
			if r.code != 1 {
				t.Errorf("invalid files: status %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			contains(t, "check's lines", r.stdout,
				"bad.py:1:5: '(' was never closed (python ",
				"    x = (1,\n        ^\n    exact fix (--fix writes it): line 1: added ')' at column 8 to close '(' from line 1\n",
				"worse.py:1:7: invalid syntax",
				"c.json:1:9: invalid character '}' looking for beginning of object key string (json)\n    {\"a\": 1,}\n            ^\n",
				"bad.toml:2:7: Key 'a' has already been defined. (toml)")
			if r := sb.run("check", "--fix", "bad.py"); r.code != 0 || !strings.Contains(r.stdout, "    fixed: line 1: added ')'") {
				t.Errorf("--fix: status %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if data, _ := os.ReadFile(filepath.Join(sb.ws, "bad.py")); string(data) != "x = (1,)\ny = 2\n" {
				t.Errorf("--fix wrote %q", data)
			}
			if r := sb.run("check", "--fix", "worse.py"); r.code != 1 {
				t.Errorf("--fix without a fix: status %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, args := range [][]string{{"check"}, {"check", "missing.py"}, {"check", "--nope", "good.py"}} {
				if r := sb.run(args...); r.code != 2 || strings.Contains(r.stderr, "goroutine") {
					t.Errorf("%v: status %d\n%s", args, r.code, r.stderr)
				}
			}
		})
	}
}

// TestMCPBlockChecks: the after-block lines end the MCP tool's text, and
// its structured result carries them.
func TestMCPBlockChecks(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	c := connectMCP(t, sb, "--session", "m")
	text, st := c.python(`open("bad.py", "w").write("x = (1,\n")`+"\nprint('wrote')", false)
	if !strings.HasPrefix(text, "wrote\n") || !strings.Contains(text, "[file check] bad.py:1:5: '(' was never closed") {
		t.Errorf("text: %q", text)
	}
	b, _ := json.Marshal(st["checks"])
	if !strings.Contains(string(b), `"path":"bad.py"`) || !strings.Contains(string(b), `"fix":"line 1: added ')'`) {
		t.Errorf("structured checks: %s", b)
	}
}
