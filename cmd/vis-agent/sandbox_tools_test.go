package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// TestSandboxTools is the session's host functions on every CPython:
// attachments (text, bytes, a Path, versions, commentable and read-only,
// unknown names), cat, grep and patch with their bad inputs, shell (exit,
// await, stop, timeout), apropos and doc, and a shadowed function coming
// back in the next block.
func TestSandboxTools(t *testing.T) {
	t.Parallel()
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			os.WriteFile(filepath.Join(sb.ws, "notes.txt"), []byte("alpha\nbeta\ngamma beta\n"), 0o644)
			os.WriteFile(filepath.Join(sb.ws, ".gitignore"), []byte("ignored.txt\n"), 0o644)
			os.WriteFile(filepath.Join(sb.ws, "ignored.txt"), []byte("beta\n"), 0o644)
			os.WriteFile(filepath.Join(sb.ws, "blob.bin"), []byte("beta\x00\x01"), 0o644)

			r := sb.block("t", `
d1 = attach("first\n", filename="PLAN.md", commentable=True)
d2 = attach(b"second\n", filename="PLAN.md")
d3 = attach(Path("notes.txt"))
d4 = attach(bytearray(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x05\x00\x00\x00\x07" + bytes(20)), filename="dot.png")
print("versions", d1.version, d2["version"], d3.filename, d3.block, d1.commentable, d2.commentable)
print("latest", get_attachment("PLAN.md").version, "back", get_attachment("PLAN.md", version=-2).version)
print("read", read_attachment("PLAN.md", text=True).strip(), read_attachment(d1.id) == b"first\n", read_attachment("notes.txt", version=1, text=True).count("beta"))
print("list", [(a.filename, a.version) for a in list_attachments()])
print("json", sorted(json.loads(json.dumps(d1))))
show_attachment("dot.png")
show_attachment("notes.txt")
for bad in ("PLAN.mdx", "nothing-like-it", d1.id[:-1] + "x"):
    try:
        get_attachment(bad)
    except KeyError as e:
        print("KeyError", str(e).replace(bad, "?"))
try:
    get_attachment("PLAN.md", version=5)
except KeyError as e:
    print("KeyError", e)
try:
    d1.nope
except AttributeError as e:
    print("AttributeError", e)
try:
    attach(42)
except TypeError as e:
    print("TypeError", e)
`, 0)
			contains(t, "attachments", r.stdout,
				"versions 1 2 notes.txt 1 True False",
				"latest 2 back 1",
				"read second True 2",
				"list [('dot.png', 1), ('notes.txt', 1), ('PLAN.md', 2), ('PLAN.md', 1)]",
				"'block', 'commentable', 'created', 'filename', 'id', 'kind', 'media_type', 'session', 'sha256', 'size', 'version'",
				"dot.png v1, image/png", "PNG image, 5x7 pixels",
				"alpha\nbeta\ngamma beta",
				`KeyError 'no attachment "?" in this session; nearest: PLAN.md'`,
				`KeyError 'no attachment "?" in this session; its newest: dot.png, notes.txt, PLAN.md'`+"\n"+`KeyError 'no attachment "?" in this session; its newest: dot.png, notes.txt, PLAN.md'`,
				"it has versions 1, 2",
				"attachment has no field 'nope'; its fields: id, filename, version",
				"TypeError attach() takes str, bytes")

			// Comments from people, through the CLI, read back in a block.
			if c := sb.run("attachment", "comment", "--session", "t", "PLAN.md", "--version", "1", "Looks right."); c.code != 0 {
				t.Fatalf("comment: status %d\n%s%s", c.code, c.stdout, c.stderr)
			}
			c := sb.run("attachment", "comment", "--session", "t", "PLAN.md", "--version", "2", "No.")
			if c.code == 0 || !strings.Contains(c.stderr, "read-only") {
				t.Errorf("a comment on a read-only version: status %d, stderr %q", c.code, c.stderr)
			}
			if g := sb.run("attachment", "get", "--session", "t", "PLAN.md", "-o", "-"); g.stdout != "second\n" {
				t.Errorf("attachment get -o -: %q %s", g.stdout, g.stderr)
			}
			r = sb.block("t", `
d = get_attachment("PLAN.md", version=1)
print("comments", [c.text for c in d.comments], len(get_attachment("PLAN.md").get("comments") or []))
print(d)`, 0)
			contains(t, "comments", r.stdout, "comments ['Looks right.'] 0", "PLAN.md v1", "commentable, 1 comment")

			r = sb.block("t", `
print(cat("notes.txt"))
print(cat("notes.txt", offset=1, limit=1))
print(grep("beta"))
print("rows", len(grep("beta").matches), grep("beta").matches[0].file)
print(patch("notes.txt", "alpha", "ALPHA"))
print(cat("notes.txt").text.splitlines()[0])
for call in ("cat('.')", "cat('missing.txt')", "grep('(', '.')", "patch('notes.txt', 'beta', 'x')", "patch('notes.txt', 'zeta', 'x')", "patch('notes.txt', 'gamma  beta', 'x')", "cat('/etc/hostname')", "patch('notes.txt', 'x' * (17 << 20), 'y')"):
    try:
        eval(call)
    except Exception as e:
        print(type(e).__name__, "|", e)
`, 0)
			contains(t, "files", r.stdout,
				"    1\talpha\n    2\tbeta\n    3\tgamma beta\n",
				"    2\tbeta\n(lines 2-2 of 3 shown; read more with cat(\"notes.txt\", offset=2))",
				"notes.txt:2:beta\nnotes.txt:3:gamma beta",
				"rows 2 notes.txt",
				"-alpha\n+ALPHA",
				"    1\tALPHA",
				"FileNotFoundError | cat: no such file",
				"IsADirectoryError | cat: is a directory",
				"ValueError | grep: bad regex",
				"ValueError | patch notes.txt: old text found 2 times (lines 2, 3)",
				"ValueError | patch notes.txt: old text not found",
				`its first line is line 3 with other whitespace: "gamma beta"`,
				"PermissionError | cat: outside the session's roots: /etc/hostname",
				"ValueError | the arguments of patch take 17 MiB; a tool call carries at most 16 MiB")
			if strings.Contains(r.stdout, "ignored.txt:") || strings.Contains(r.stdout, "blob.bin:") {
				t.Errorf("grep read an ignored or binary file:\n%s", r.stdout)
			}
			contains(t, "grep's note", r.stdout, "binary files skipped: blob.bin")
			// Each file a block cats at the top level is shown, not the last only.
			r = sb.block("t", "cat('notes.txt'); x = 1; cat('notes.txt', offset=1, limit=1)", 0)
			contains(t, "two cats", r.stdout, "    1\tALPHA\n", "(lines 2-2 of 3 shown")

			r = sb.block("t", `
import asyncio, time
r = shell("echo out; echo err >&2; exit 3")
print("plain", r.status, r.exit, repr(r.out), repr(r["err"]))
r = await shell("sleep 0.5; echo later", wait=0)
print("awaited", r.status, r.out.strip())
a, b = await asyncio.gather(shell("sleep 1; echo a", wait=0), shell("sleep 1; echo b", wait=0))
print("gathered", a.out + b.out == "a\nb\n", a != b)
r = shell("sleep 60", wait=0)
print("left", r.status)
print("stopped", r.stop().status)
t0 = time.time()
r = shell("sleep 60", timeout=1)
print("timeout", r.status, time.time() - t0 < 10)
r = shell("for i in 1 2 3 4 5; do echo line$i; done")
print("logs", r.logs(-2).split(), r.logs(1).split())
print(repr(r))
import json
r30 = shell("seq 1 30")
print("last20", r30.logs(-20).split()[0], len(r30.logs(-20).split()))
print("dict", dict(r30)["status"], json.loads(json.dumps(r30))["exit"], sorted(dict(r30)) == sorted(r30.keys()))
for bad in ("r30.nope", "r30['nope']"):
    try:
        eval(bad)
    except (AttributeError, KeyError) as e:
        print(type(e).__name__, e)
for bad in ("shell('')", "shell('ls', cwd='missing-dir')", "shell('ls', timeout=-1)"):
    try:
        eval(bad)
    except Exception as e:
        print(type(e).__name__, "|", e)
`, 0)
			contains(t, "shell", r.stdout,
				"plain exited 3 'out\\n' 'err\\n'",
				"awaited exited later",
				"gathered True True",
				"left running", "stopped stopped",
				"timeout timed out True",
				"logs ['line4', 'line5'] ['line1']",
				"last20 11 20", "dict exited 0 True",
				"AttributeError shell handle has no field 'nope'; its fields: id, command,",
				`KeyError "'nope' is not a field of this shell handle; its fields: id, command,`,
				"<shell sh", "exited, exit 0, out 30 bytes>",
				"ValueError | shell: the command is empty",
				"ValueError | timeout must be more than 0 seconds, not -1")
			contains(t, "a missing cwd", r.stdout, "ValueError | shell: cwd missing-dir is not a folder")

			// Protected names: shadowed in one block, back in the next.
			r = sb.block("t", "attach = 1\ncat = 'x'\nprint(attach, cat)", 0)
			contains(t, "shadowing block", r.stdout, "1 x")
			r = sb.block("t", "print(attach('again', filename='a.txt').filename, cat('notes.txt').lines)", 0)
			contains(t, "next block", r.stdout, "a.txt 3")

			r = sb.block("t", `
def mine(a, b=1):
    """Adds things."""
def bare(): pass
print(apropos("attach"))
print(apropos("^mine$")[0].summary, apropos("mine")[0]["type"])
doc("shell")
doc(apropos("^bare$")[0])
doc(mine)
`, 0)
			contains(t, "help", r.stdout,
				"tool     attach             Store data as an attachment of this session and return its descriptor.",
				"tool     list_attachments",
				"Adds things. function",
				"shell(cmd, timeout=300, cwd=None, wait=10)\n    Run a shell command through the host",
				"bare()\n    bare carries no docstring",
				"mine(a, b=1)\n    Adds things.")
		})
	}
}

// TestSandboxToolsEdges: limits, output cut in the handle, interrupts
// during a host call, garbage on the host-call descriptor, a jailed shell
// and a crash of the host right after an attach, on two CPythons.
func TestSandboxToolsEdges(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nmax_attachment_mb = 1\n"), 0o644)

			// Limits: over, a clear error and nothing stored.
			r := sb.block("e", `
try:
    attach(bytes(2 << 20), filename="big.bin")
except ValueError as e:
    print("ValueError", e)
print("stored", len(list_attachments()))
print(attach(bytes(1 << 20), filename="fits.bin").size)
`, 0)
			contains(t, "limit", r.stdout, "ValueError 2 MiB is over the limit of 1 MiB per attachment", "nothing was stored", "stored 0", "1048576")

			// 100 MB of output: cut in the handle, counted in full.
			r = sb.block("e", `
r = shell("head -c 100000000 /dev/zero | tr '\\0' y | fold -w 99", wait=120)
print(r.status, r.out_bytes, len(r.out) < 100000, r.out_cut > 99000000)
print(repr(r))
print(r.logs(-2))
`, 0)
			contains(t, "100 MB", r.stdout, "exited 101010101 True True", "cut from r.out; r.logs(n) reads lines", "yyyyy")

			// An interrupt during a host call: KeyboardInterrupt, and the
			// link still works.
			start := time.Now()
			r = sb.block("e", `r = shell("sleep 60", wait=0)
r.wait()`, 1, "--timeout", "3s")
			contains(t, "interrupted call", r.stderr, "KeyboardInterrupt", "The block ran past its timeout of 3 seconds")
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the interrupted call took %s", d)
			}
			r = sb.block("e", `print(r.stop().status, session.name, len(list_attachments()))`, 0)
			contains(t, "after the interrupt", r.stdout, "stopped e 1")

			// A signal handler that calls a tool while its thread waits
			// in one: a clear error, not a thread waiting for itself.
			r = sb.block("e", `
import signal
signal.signal(signal.SIGALRM, lambda *a: list_attachments())
signal.setitimer(signal.ITIMER_REAL, 0.3)
try:
    shell("sleep 3", wait=0).wait()
except RuntimeError as e:
    print("RuntimeError", e)
signal.signal(signal.SIGALRM, signal.SIG_DFL)
print("then", len(list_attachments()))
`, 0)
			contains(t, "a call from a signal handler", r.stdout, "RuntimeError a tool call from a signal handler", "then 1")

			// Threads share the link.
			r = sb.block("e", `
import threading
errors = []
def worker():
    try:
        for _ in range(30):
            assert list_attachments()[0].filename == "fits.bin"
            assert get_attachment("fits.bin").size == 1 << 20
    except BaseException as e:
        errors.append(e)
ts = [threading.Thread(target=worker) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print("threads", errors)
`, 0)
			contains(t, "threads", r.stdout, "threads []")

			// Garbage on the host-call descriptor: errors for this session at
			// worst, and a host that goes on.
			r = sb.block("e", `
os.write(5, b"not json\n")
os.write(5, b"\xff\xfe half a line")
print("after garbage", cat(".gitkeep-missing") if False else len(list_attachments()))
os.write(5, b'{"id":0,"size":0,"op":"attach","args":{"filename":7}}\n')
os.write(5, b'{"id":0,"size":0,"op":"nothing"}\n')
print("after forged", len(list_attachments()))
os.write(5, b'{"id":0,"size":99999999999,"op":"attach"}\n')
try:
    list_attachments()
except ConnectionError as e:
    print("ConnectionError", e)
`, 0)
			contains(t, "garbage", r.stdout, "after garbage 1", "after forged 1", "ConnectionError")
			r = sb.block("e", `print("replaced", len(list_attachments()))`, 0)
			contains(t, "after a broken link", r.stdout, "replaced 1", "[Sandbox restarted]", "tool link")

			// A jailed shell cannot read outside the roots.
			secret := filepath.Join(t.TempDir(), "secret.txt")
			os.WriteFile(secret, []byte("TOPSECRET"), 0o600)
			r = sb.block("e", fmt.Sprintf(`
r = shell("cat %[1]s", wait=30)
print("jailed", session.access.is_jailed, r.status, r.exit != 0)
print(r.out, r.err)
try:
    cat(%[1]q)
except PermissionError as e:
    print("PermissionError")
try:
    attach(Path(%[1]q))
except PermissionError as e:
    print("PermissionError attach")
`, secret), 0)
			contains(t, "jailed shell", r.stdout, "jailed True exited True", "PermissionError\n", "PermissionError attach")
			if strings.Contains(r.stdout, "TOPSECRET") {
				t.Errorf("a jailed session read a secret outside its roots:\n%s", r.stdout)
			}

			// kill -9 of the host right after an attach, and while attaches
			// go on: every attachment listed has its bytes.
			sb.block("e", `print(attach("survives", filename="crash.txt").version)`, 0)
			syscall.Kill(sb.record(sb.folder("e")).HostPID, syscall.SIGKILL)
			r = sb.block("e", `print(read_attachment("crash.txt", text=True), len(list_attachments()))`, 0)
			contains(t, "after kill -9", r.stdout, "survives 2")
			loop := sb.command("run", "--session", "e", "-c", `
import os
while True:
    attach(os.urandom(200000), filename="loop.bin")
    print("attached", flush=True)`)
			out := &lockedBuffer{}
			loop.Stdout = out
			if err := loop.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); strings.Count(out.String(), "attached") < 5 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			syscall.Kill(sb.record(sb.folder("e")).HostPID, syscall.SIGKILL)
			loop.Wait()
			r = sb.block("e", `
n = 0
for d in list_attachments():
    data = read_attachment(d)
    assert len(data) == d.size and hashlib.sha256(data).hexdigest() == d.sha256, d
    n += d.filename == "loop.bin"
print("whole", n >= 5)
`, 0)
			contains(t, "after kill -9 during attaches", r.stdout, "whole True")
		})
	}
}

// lockedBuffer is an io.Writer a test reads while a process writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSandboxToolsSessionsApart: two sessions attaching at once each see
// their own attachments only, under the same filenames.
func TestSandboxToolsSessionsApart(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	var wg sync.WaitGroup
	outs := make([]result, 2)
	for i, name := range []string{"one", "two"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = sb.run("run", "--session", name, "-c", fmt.Sprintf(`
for i in range(20):
    attach(f"%s {i}", filename="same.txt")
print([a.version for a in list_attachments()][:3], read_attachment("same.txt", text=True))
`, name))
		}()
	}
	wg.Wait()
	for i, name := range []string{"one", "two"} {
		if outs[i].code != 0 {
			t.Fatalf("session %s: status %d\n%s%s", name, outs[i].code, outs[i].stdout, outs[i].stderr)
		}
		contains(t, "session "+name, outs[i].stdout, "[20, 19, 18] "+name+" 19")
	}
	var list []map[string]any
	r := sb.run("run", "--session", "one", "--json", "-c", `print(json.dumps(list_attachments()))`)
	var v map[string]any
	json.Unmarshal([]byte(r.stdout), &v)
	if err := json.Unmarshal([]byte(fmt.Sprint(v["stdout"])), &list); err != nil || len(list) != 20 {
		t.Fatalf("session one lists %d attachments (%v): %s", len(list), err, r.stdout)
	}
	for _, d := range list {
		if d["session"] != "one" {
			t.Errorf("session one lists %v", d)
		}
	}
	// The host's status counts the session's attachments.
	if n := sb.attachmentCount("one"); n == nil || *n != 20 {
		t.Errorf("status of session one: %v attachments, want 20", n)
	}
	sb.block("one", `attach("x")`, 0)
	if n := sb.attachmentCount("one"); n == nil || *n != 21 {
		t.Errorf("status of session one after an attach: %v attachments, want 21", n)
	}

	// The host answers for the session that calls: a request naming
	// another one is refused, not served.
	r = sb.run("run", "--session", "one", "-c", `
import _vis_host
print(json.loads(_vis_host.call(b'{"op":"session"}', None)[0])["result"]["name"])
print(_vis_host.call(b'{"op":"attachments","args":{"session":"two"}}', None)[0].decode())
for bad in ((b"x", None), (b'{"op":"session"}',), ("str", None), (b'{"op":\n"x"}', None)):
    try:
        _vis_host.call(*bad)
    except (TypeError, ValueError) as e:
        print(type(e).__name__, e)
`)
	contains(t, "forged session", r.stdout, "one\n", `"ok":false`, `unknown field \"session\"`,
		"ValueError the header is one JSON object", "TypeError call(header: bytes, payload: bytes | None)")
}

// attachmentCount asks the host of session name for its status.
func (sb *sandbox) attachmentCount(name string) *int {
	sb.t.Helper()
	conn, err := session.Folder{Dir: sb.folder(name)}.Connect()
	if err != nil {
		sb.t.Fatalf("dial the host of %s: %v", name, err)
	}
	defer conn.Close()
	if err := protocol.Write(conn, protocol.Request{V: protocol.Version, Op: "status"}); err != nil {
		sb.t.Fatal(err)
	}
	var ev protocol.Event
	if err := protocol.NewConn(conn, nil).Receive(&ev); err != nil || ev.Status == nil {
		sb.t.Fatalf("status of %s: %v %+v", name, err, ev)
	}
	return ev.Status.Attachments
}

// TestSandboxPropose: in a workspace under git, propose() attaches the
// block's change against HEAD (a changed file and a new one) as a
// commentable patch, led by its message, that `attachment get` writes and
// `git apply` takes in a clone at HEAD; with nothing changed it is None.
func TestSandboxPropose(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			testenv.WriteTree(t, sb.ws, map[string]string{"greet.py": "print('hello')\n", "data.bin": "\x00\x01"})
			gitIn := func(dir string, args ...string) string {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			gitIn(sb.ws, "init", "-q")
			gitIn(sb.ws, "add", ".")
			gitIn(sb.ws, "commit", "-qm", "start")
			r := sb.block("pr", `print(propose())
open("greet.py", "w").write("print('hello, world')\n")
open("new.txt", "w").write("a new file\n")
p = propose("greet the world")
print(p.filename, p.kind, p.commentable)`, 0)
			contains(t, "propose()", r.stdout, "None\n", "proposal.patch patch True")
			patch := filepath.Join(t.TempDir(), "proposal.patch")
			sb.ok("attachment", "get", "--session", "pr", "proposal.patch", "-o", patch)
			clone := filepath.Join(t.TempDir(), "clone")
			gitIn(sb.ws, "clone", "-q", sb.ws, clone)
			gitIn(clone, "apply", patch)
			for name, want := range map[string]string{"greet.py": "print('hello, world')\n", "new.txt": "a new file\n"} {
				if got, _ := os.ReadFile(filepath.Join(clone, name)); string(got) != want {
					t.Errorf("%s after git apply: %q", name, got)
				}
			}
			if text, _ := os.ReadFile(patch); !strings.HasPrefix(string(text), "# greet the world\n") {
				t.Errorf("the patch does not start with its message:\n%s", text)
			}
		})
	}
}
