package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// The attacks of this file are on what runs outside the jail: the session
// host and the clients. Each prints ESCAPED (built at run time) only when
// it got through.

// socketAttack is a block that connects to each session socket in SOCKS,
// asks for a block run with the jail off (a block that plants a file
// outside the roots and prints its escape), and prints what each answered.
const socketAttack = `import json, socket
E = "ESC" + "APED"
for path in SOCKS:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(path)
        code = "open(%r, 'w').write('x'); print(%r + 'UNJAILED', session.access.is_jailed)" % (MARKER, E[:3])
        req = {"v": 1, "op": "run", "code": code, "timeout_ms": 5000,
               "policy": {"jail": False, "network": True, "max_threads": 64, "memory_mb": 4096}}
        s.sendall((json.dumps(req) + "\n").encode())
        got = b""
        while len(got) < 100000:
            d = s.recv(65536)
            if not d:
                break
            got += d
        print("answer:", got.decode(errors="replace")[-400:])
    except Exception as e:
        print("refused:", type(e).__name__, e)
`

// TestJailHostSocketNeedsTheUser: a request on a session's socket is not
// enough to run anything, let alone with the jail off. A jailed block and
// a block of a --no-jail session (whose connects nothing in the kernel
// stops, so the host's own check is what holds) connect to their own
// session's socket and to another session's, and ask for a run without the
// jail: each is refused, no file appears outside the roots, and the other
// session is still jailed, without a restart. The test itself then does
// the same as a process of the user that does not hold the session's key.
func TestJailHostSocketNeedsTheUser(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) { socketNeedsTheUser(t, sb) })
}

func socketNeedsTheUser(t *testing.T, sb *sandbox) {
	other := t.TempDir()
	r := sb.run("run", "--session", "victim", "--workspace", other, "-c", "print('victim up', session.access.is_jailed)")
	contains(t, "the victim", r.stdout, "victim up True")
	sb.block("jailed", "pass", 0)
	sb.block("free", "pass", 0, "--no-jail")
	out := t.TempDir()
	marker := filepath.Join(out, "planted")
	socks := fmt.Sprintf("SOCKS = [%q, %q, %q]\nMARKER = %q\n", filepath.Join(sb.folder("victim"), "sock"),
		filepath.Join(sb.folder("jailed"), "sock"), filepath.Join(sb.folder("free"), "sock"), marker)

	for _, s := range []struct{ name, flag string }{{"jailed", ""}, {"free", "--no-jail"}} {
		args := []string{"run", "--session", s.name, "--timeout", "60s", "-c", socks + socketAttack}
		if s.flag != "" {
			args = append(args, s.flag)
		}
		r := sb.run(args...)
		all := r.stdout + r.stderr
		if strings.Contains(all, "ESCAPED") || strings.Contains(all, "ESCUNJAILED") {
			t.Errorf("%s: a socket request ran a block:\n%s", s.name, all)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: a socket request ran a block without the jail: %s exists\n%s", s.name, marker, all)
		}
		if strings.Count(all, "refused") < 3 {
			t.Errorf("%s: not every request was refused:\n%s", s.name, all)
		}
		if s.name == "free" {
			// Nothing in the kernel refuses these connects: the host does.
			contains(t, "the hosts' answers to a --no-jail block", r.stdout, "this session's key")
		}
	}

	// A process of the user without the key: the same request, and one
	// with a wrong key, straight to the victim's socket.
	// A unix socket's path is short (108 bytes): dial through a link.
	short, err := os.MkdirTemp("", "vis-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(short)
	if err := os.Symlink(sb.folder("victim"), filepath.Join(short, "v")); err != nil {
		t.Fatal(err)
	}
	for _, first := range []string{"", `{"v":1,"key":"` + strings.Repeat("0", 64) + `"}` + "\n"} {
		conn, err := net.Dial("unix", filepath.Join(short, "v", "sock"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(conn, `%s{"v":1,"op":"run","code":"open(%q,'w')","policy":{"jail":false,"network":true}}`+"\n", first, marker)
		answer, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.Contains(answer, `"ev":"error"`) || !strings.Contains(answer, "this session's key") {
			t.Errorf("a request without the key was answered %q", answer)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("a request without the key ran a block: %s exists", marker)
	}
	r = sb.run("run", "--session", "victim", "--workspace", other, "-c", "print('still', session.access.is_jailed)")
	contains(t, "the victim afterwards", r.stdout, "still True")
	if strings.Contains(r.stdout, "[Sandbox restarted]") {
		t.Errorf("the victim's Python was replaced:\n%s", r.stdout)
	}
}

// fdAttack reads descriptor 7 and a few more a block did not open, by
// number and through /proc/self/fd.
const fdAttack = `import os
E = "ESC" + "APED"
for fd in (7, 8, 9):
    for how in ("read", "proc"):
        try:
            data = os.read(fd, 100) if how == "read" else open("/proc/self/fd/%d" % fd, "rb").read(100)
            if data.startswith(b"FDSECRET"):
                print(E, fd, how, data)
        except OSError as e:
            pass
print("fd attack done")
`

// descriptorsOn lists the open descriptors of pid that point at path.
func descriptorsOn(pid int, path string) []string {
	var found []string
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, e := range entries {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && target == path {
			found = append(found, e.Name())
		}
	}
	return found
}

// inheritable lists the descriptors from 3 on of pid that are not
// close-on-exec: what a program it starts would get.
func inheritable(pid int) []string {
	var found []string
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fdinfo", pid))
	for _, e := range entries {
		if n, _ := strconv.Atoi(e.Name()); n < 3 {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if flags, ok := strings.CutPrefix(line, "flags:"); ok {
				if v, err := strconv.ParseUint(strings.TrimSpace(flags), 8, 64); err == nil && v&syscall.O_CLOEXEC == 0 {
					target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
					found = append(found, e.Name()+" "+target)
				}
			}
		}
	}
	return found
}

// TestJailHostInheritedDescriptors: a descriptor the user's shell had open
// when it ran the first `sandbox run` (exec 7</secret) reaches no process
// the sandbox starts: not the host, not its first child (started before
// the host's Go), not a child started after a restart, jailed or not; and
// every descriptor of the host and the child but 0-2 is close-on-exec, so
// nothing they run (the child's bytecode compile before its jail, a
// --no-jail block's os.system) gets any of them.
func TestJailHostInheritedDescriptors(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) { inheritedDescriptors(t, sb) })
}

func inheritedDescriptors(t *testing.T, sb *sandbox) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("FDSECRET-91c2"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ name, flag string }{{"jailed", ""}, {"free", "--no-jail"}} {
		func() {
			flags := ""
			if s.flag != "" {
				flags = " " + s.flag
			}
			// The user's shell holds 7 (and 8, 9) open, without
			// close-on-exec, as `exec 7<file` leaves it.
			shell := fmt.Sprintf(`exec 7<%q 8<%q 9<%q; exec %q sandbox run --session %s%s -c "$CODE"`,
				secret, secret, secret, sb.bin, s.name, flags)
			check := func(when string, code string) {
				cmd := exec.Command("/bin/sh", "-c", shell)
				cmd.Env, cmd.Dir = append(sb.env, "CODE="+code), sb.ws
				out, err := cmd.CombinedOutput()
				when = s.name + ", " + when
				if strings.Contains(string(out), "ESCAPED") || strings.Contains(string(out), "FDSECRET-91c2") {
					t.Errorf("%s: a block read the client's descriptor:\n%s", when, out)
				}
				if code == fdAttack && !strings.Contains(string(out), "fd attack done") {
					t.Errorf("%s: the block did not run (%v):\n%s", when, err, out)
				}
				rec := sb.record(sb.folder(s.name))
				for _, pid := range []int{rec.HostPID, rec.ChildPID} {
					if fds := descriptorsOn(pid, secret); len(fds) > 0 {
						t.Errorf("%s: process %d (%s) holds the secret as %v", when, pid, strings.ReplaceAll(cmdline(pid), "\x00", " "), fds)
					}
					if fds := inheritable(pid); len(fds) > 0 {
						t.Errorf("%s: process %d (%s) would pass on %v", when, pid, strings.ReplaceAll(cmdline(pid), "\x00", " "), fds)
					}
				}
			}
			check("the first child", fdAttack)
			if r := sb.run("restart", "--session", s.name); r.code != 0 {
				t.Fatalf("restart: %s", r.stderr)
			}
			check("a child after a restart", fdAttack)
			// A child the host starts from Go without a restart request:
			// the first one died.
			check("a child after a crash", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
			check("the child after the crash", fdAttack)
		}()
	}
}

// TestJailHostWorkspaceRoots: what the workspace holds chooses no root of
// the jail. A block writes a vis.toml whose python.source_paths is "/", a
// pyproject.toml whose pytest pythonpath climbs out of the workspace, and
// a src-layout src that is a symlink to a folder outside; after a restart
// none of them makes a file outside readable, or a read-only root. An
// import root inside the workspace still imports, and the user's own
// config.toml source_paths still adds a read-only root.
func TestJailHostWorkspaceRoots(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) { workspaceRoots(t, sb) })
}

func workspaceRoots(t *testing.T, sb *sandbox) {
	out, userlib := t.TempDir(), t.TempDir()
	testenv.WriteTree(t, out, map[string]string{"secret": "ROOTSECRET-5b1d", "secretmod.py": "X = 'ROOTSECRET-5b1d'\n"})
	testenv.WriteTree(t, userlib, map[string]string{"usermod.py": "Y = 'from the user lib'\n"})
	testenv.WriteTree(t, sb.home, map[string]string{"config.toml": fmt.Sprintf("[python]\nsource_paths = [%q]\n", userlib)})
	rel, err := filepath.Rel(sb.ws, out)
	if err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf(`OUT = %q
for how in ("open", "import"):
    try:
        print("ESC" + "APED", open(OUT + "/secret").read() if how == "open" else __import__("secretmod").X)
    except Exception as e:
        print(how, "refused:", type(e).__name__)
print("roots:", [r for r in session.access.read_only_roots if not r.startswith(("/usr", "/lib", "/etc", "/root", "/opt"))])
`, out)
	vectors := []struct{ name, plant string }{
		{"vis.toml source_paths", `open("vis.toml", "w").write('[python]\nsource_paths = ["/", %r]\n' % OUT)`},
		{"pytest pythonpath", fmt.Sprintf(`open("pyproject.toml", "w").write('[project]\nname = "p"\nversion = "0"\n[tool.pytest.ini_options]\npythonpath = [%%r, "../../../../.."]\n' %% %q)`, rel)},
		{"a src symlink", `open("pyproject.toml", "w").write('[project]\nname = "p"\nversion = "0"\n[build-system]\nbuild-backend = "setuptools.build_meta"\n')
os.symlink(OUT, "src")`},
	}
	for _, v := range vectors {
		r := sb.block("w", fmt.Sprintf("import os\nOUT = %q\n%s\nprint('planted')", out, v.plant), 0)
		contains(t, v.name, r.stdout, "planted")
		if r := sb.run("restart", "--session", "w"); r.code != 0 {
			t.Fatalf("restart: %s", r.stderr)
		}
		r = sb.block("w", probe, 0)
		if strings.Contains(r.stdout+r.stderr, "ESCAPED") || strings.Contains(r.stdout, out) || strings.Contains(r.stdout, "'/'") {
			t.Errorf("%s: the workspace chose a root of the jail:\n%s%s", v.name, r.stdout, r.stderr)
		}
		contains(t, v.name, r.stdout, "open refused", "import refused")
		for _, f := range []string{"vis.toml", "pyproject.toml", "src"} {
			os.Remove(filepath.Join(sb.ws, f))
		}
	}

	// Inside the workspace: an import root, no more.
	testenv.WriteTree(t, sb.ws, map[string]string{
		"pyproject.toml":   "[project]\nname = \"p\"\nversion = \"0\"\n[build-system]\nbuild-backend = \"setuptools.build_meta\"\n",
		"src/inside_ws.py": "Z = 'from src'\n",
	})
	sb.run("restart", "--session", "w")
	r := sb.block("w", `import inside_ws, usermod
print(inside_ws.Z, "|", usermod.Y, "|", [r for r in session.access.read_only_roots if r.endswith("/src")])`, 0)
	contains(t, "the roots kept", r.stdout, "from src | from the user lib | []")
	if !strings.Contains(r.stdout, "from the user lib") {
		t.Errorf("the user's source_paths:\n%s", r.stderr)
	}
}

// TestJailHostUserRootInsideTheWorkspace: a root the user gives inside a
// writable root (the workspace, as given or through a symlink outside
// that leads into it) is refused in one line: the jailed code could swap
// it for a symlink to anything before the next run resolves it.
func TestJailHostUserRootInsideTheWorkspace(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) {
		out, via := t.TempDir(), t.TempDir()
		testenv.WriteTree(t, out, map[string]string{"secret": "SWAPSECRET-e03a"})
		testenv.WriteTree(t, sb.ws, map[string]string{"ref/data.txt": "reference"})
		if err := os.Symlink(sb.ws, filepath.Join(via, "ws")); err != nil {
			t.Fatal(err)
		}
		// The attack, as a block would run it: the user's first run gives
		// --read-only-root ref; its block swaps ref for a symlink to a secret
		// folder; the next run of the same command reads the secret.
		swap := fmt.Sprintf(`import os, shutil
shutil.rmtree("ref"); os.symlink(%q, "ref"); print("swapped")`, out)
		read := `print("ESC" + "APED", open(session.workspace + "/ref/secret").read())`
		for _, root := range []string{"ref", filepath.Join(sb.ws, "ref"), filepath.Join(via, "ws", "ref")} {
			for _, flag := range []string{"--read-only-root", "--root"} {
				r := sb.run("run", "--session", "u", flag, root, "-c", swap)
				if r.code == 0 {
					r = sb.run("run", "--session", "u", flag, root, "-c", read)
				}
				if strings.Contains(r.stdout+r.stderr, "ESCAPED") || strings.Contains(r.stdout+r.stderr, "SWAPSECRET") {
					t.Errorf("%s %s: the swapped root was read:\n%s%s", flag, root, r.stdout, r.stderr)
				}
				if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "inside the workspace") {
					t.Errorf("%s %s: status %d, want 2 and one line saying the root is inside the workspace:\n%s", flag, root, r.code, r.stderr)
				}
				os.Remove(filepath.Join(sb.ws, "ref"))
				testenv.WriteTree(t, sb.ws, map[string]string{"ref/data.txt": "reference"})
			}
		}
		testenv.WriteTree(t, sb.home, map[string]string{"config.toml": fmt.Sprintf("[sandbox]\nread_only_roots = [%q]\n", filepath.Join(sb.ws, "ref"))})
		r := sb.run("run", "--session", "u", "-c", "print('ran')")
		if r.code == 0 || !strings.Contains(r.stderr, "inside the workspace") || !strings.Contains(r.stderr, "config.toml") {
			t.Errorf("a config root inside the workspace: status %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestJailHostHostileSessionFiles: the jailed code replaces its block
// counter (read by the REPL's watcher) with a FIFO, then with a link to
// /dev/zero; `sandbox list`, the next block and a restart (whose restore
// reads it) carry on, at once.
func TestJailHostHostileSessionFiles(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) {
		for _, plant := range []string{"os.mkfifo(c)", `os.symlink("/dev/zero", c)`} {
			sb.block("h", fmt.Sprintf(`import os
c = os.path.join(session.access.roots[1], "blocks")
if os.path.lexists(c): os.remove(c)
%s
print("planted")`, plant), 0)
			start := time.Now()
			l := sb.run("list")
			contains(t, "list", l.stdout, "h ")
			sb.block("h", "print('next')", 0)
			if r := sb.run("restart", "--session", "h"); r.code != 0 {
				t.Fatalf("restart after %s: %s", plant, r.stderr)
			}
			contains(t, "after a restart", sb.block("h", "print('again')", 0).stdout, "again")
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("%s: list, a block and a restart took %s", plant, d)
			}
		}
	})
}

// hostPeakUnder fails t when the host's peak memory (VmHWM) passed mib
// MiB, and logs it otherwise, as the figure it is.
func hostPeakUnder(t *testing.T, pid int, mib float64) {
	t.Helper()
	if peak := hostStatus(t, pid, "VmHWM"); peak > mib {
		t.Errorf("the host's peak memory was %.0f MiB, over %.0f MiB", peak, mib)
	} else {
		t.Logf("the host's peak memory: %.0f MiB", peak)
	}
}

// hostStatus reads a number of kB (VmHWM, VmRSS) from /proc/pid/status, in
// MiB.
func hostStatus(t *testing.T, pid int, field string) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("the host %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	t.Fatalf("no %s in the host's status", field)
	return 0
}

// cpuSeconds is the CPU time a process used so far.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// rawCalls is a block that writes n host-call requests straight to the
// host-call link (descriptor 5), past the one-at-a-time shim, each with a
// payload of size bytes, then reads answers for a second and prints the
// errors it got, once each.
const rawCalls = `import json, os, select, time
def raw(n, op, args, size=0):
    for i in range(n):
        head = json.dumps({"id": 10**6 + i, "size": size, "op": op, "args": args}).encode() + b"\n"
        os.write(5, head)
        if size:
            chunk = b"z" * (1 << 20)
            left = size
            while left:
                left -= os.write(5, chunk[:min(left, len(chunk))])
    errors, deadline, buf = set(), time.time() + 1, b""
    while time.time() < deadline:
        if select.select([5], [], [], 0.1)[0]:
            buf += os.read(5, 1 << 20)
    for line in buf.split(b"\n"):
        if line.startswith(b'{"id":'):
            try:
                e = json.loads(line).get("error")
            except ValueError:
                continue
            if e:
                errors.add(e["message"][:120])
    print("raw errors:", sorted(errors))
`

// TestJailHostBounds: the block drives the host as hard as it can, and
// the host stays bounded: a 30 MiB .gitignore, a .gitignore that is a
// FIFO, a grep asking for every match of 2 million lines, 200 greps
// written straight to the host-call link, a grep the block's timeout
// interrupts, and 60 MiB payloads written straight to the link: the
// host's peak memory stays under 256 MiB, its work stops when the block
// ends, the next block runs at once, and the per-session attachments
// quota refuses what is past it.
func TestJailHostBounds(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		testenv.WriteTree(t, sb.home, map[string]string{"config.toml": "[sandbox]\nmax_attachments_mb = 100\n"})
		var big, ignore strings.Builder
		for i := 0; i < 2_000_000; i++ {
			big.WriteString("xyxyxyxyxy\n")
		}
		for i := 0; big.Len() > 0 && ignore.Len() < 30<<20; i++ {
			fmt.Fprintf(&ignore, "generated/pattern-%d-*.tmp\n", i)
		}
		testenv.WriteTree(t, sb.ws, map[string]string{"big.txt": big.String(), "deep/.gitignore": ignore.String(), "deep/a.txt": "xy\n", "fifo/a.txt": "xy\n"})
		if err := syscall.Mkfifo(filepath.Join(sb.ws, "fifo", ".gitignore"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(sb.ws, "many"), 0o755)
		for i := 0; i < 12; i++ {
			if err := os.Link(filepath.Join(sb.ws, "big.txt"), filepath.Join(sb.ws, "many", fmt.Sprintf("big%d.txt", i))); err != nil {
				t.Fatal(err)
			}
		}
		sb.block("b", "print('up')", 0)
		host := sb.record(sb.folder("b")).HostPID
		quiet := func(what string) {
			t.Helper()
			before := cpuSeconds(t, host)
			time.Sleep(3 * time.Second)
			if used := cpuSeconds(t, host) - before; used > 0.5 {
				t.Errorf("%s: the host used %.1f s of CPU in the 3 s after the block ended", what, used)
			}
			next := time.Now()
			sb.block("b", "print('next')", 0)
			if d := time.Since(next); d > 5*time.Second {
				t.Errorf("%s: the next block took %s", what, d)
			}
		}
		timed := func(what, code string, timeout string) result {
			t.Helper()
			start := time.Now()
			r := sb.run("run", "--session", "b", "--timeout", timeout, "-c", code)
			t.Logf("%s (%s): %s%s", what, time.Since(start).Round(time.Millisecond), r.stdout, strings.TrimSpace(r.stderr))
			return r
		}

		r := timed("a 30 MiB .gitignore", `r = grep("xy", path="deep"); print(r.total, r.note)`, "120s")
		contains(t, "grep under a huge .gitignore", r.stdout+r.stderr, "1 ")
		r = timed("a FIFO .gitignore", `r = grep("xy", path="fifo"); print("fifo", r.total)`, "20s")
		contains(t, "grep under a FIFO .gitignore", r.stdout, "fifo 1")
		r = timed("every match", `r = grep("x", path="big.txt", limit=10**9); print("matches", len(r.matches), r.total, len(r.text))`, "120s")
		contains(t, "grep of every match", r.stdout, "matches ")
		r = timed("cat of every line", `r = cat("big.txt", limit=10**9); print("lines", r.lines, len(r.text))`, "120s")
		contains(t, "cat of every line", r.stdout, "lines ")
		quiet("the greps")

		r = timed("200 raw greps", rawCalls+`raw(200, "grep", {"pattern": "(x|y)+z", "path": "."})`, "60s")
		contains(t, "200 raw greps", r.stdout, "raw errors:", "host calls")
		quiet("200 raw greps")

		r = timed("a grep past the block's timeout", `grep("(x|y)+z", path="many")`, "3s")
		contains(t, "the interrupted grep", r.stderr, "KeyboardInterrupt")
		quiet("the interrupted grep")

		r = timed("4 raw 60 MiB attaches", rawCalls+`raw(4, "attach", {"filename": "raw.bin"}, 60 << 20)`, "120s")
		contains(t, "raw attaches", r.stdout, "raw errors:")
		r = timed("the quota", `try:
    for i in range(3):
        attach(b"q" * (30 << 20), filename="q%d.bin" % i)
        print("attached", i)
except ValueError as e:
    print("quota:", e)
print(len(read_attachment("q0.bin")))`, "120s")
		contains(t, "the attachments quota", r.stdout, "attached 0", "quota:", "sandbox.max_attachments_mb", "31457280")
		quiet("the attaches")

		hostPeakUnder(t, host, 256)
	})
}

// TestJailHostHostileWorkspaceConfig: the jailed code makes the
// workspace's vis.toml and pyproject.toml FIFOs; the next child (which
// reads them before its jail) and the user's own `vis-agent python` there
// start at once, each with one line saying what is wrong.
func TestJailHostHostileWorkspaceConfig(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("c", `import os
os.mkfifo("vis.toml"); os.mkfifo("pyproject.toml"); print("planted")`, 0)
		start := time.Now()
		if r := sb.run("restart", "--session", "c"); r.code != 0 {
			t.Fatalf("restart: %s", r.stderr)
		}
		r := sb.run("run", "--session", "c", "-c", "print('next')")
		t.Logf("the next block: %s%s", r.stdout, r.stderr)
		cmd := exec.Command(sb.bin, "python", "-c", "print('python ran')")
		cmd.Env, cmd.Dir = sb.env, sb.ws
		done := make(chan []byte, 1)
		go func() {
			out, _ := cmd.CombinedOutput()
			done <- out
		}()
		select {
		case out := <-done:
			contains(t, "vis-agent python in the workspace", string(out), "not a regular file")
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("vis-agent python hangs on the workspace's FIFOs")
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("a restart, a block and a python run took %s", d)
		}
	})
}

// TestJailHostTerminalEscapes: on a terminal, `sandbox run` shows a
// block's escape sequences other than colours escaped — an OSC 52
// clipboard write, a title, a screen clear, on stdout and in an
// exception's message on stderr — and keeps colours; --raw passes all.
func TestJailHostTerminalEscapes(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	code := `import sys
print("A \x1b]52;c;SGVsbG8=\x07 B \x1b[31mred\x1b[0m C \x1b[2J D \x1b]0;title\x07 E")
raise ValueError("F \x1b]0;pwned\x07 G")`
	for _, raw := range []bool{false, true} {
		args := []string{"sandbox", "run", "--session", "t", "-c", code}
		if raw {
			args = append(args, "--raw")
		}
		cmd := exec.Command(sb.bin, args...)
		cmd.Env, cmd.Dir = sb.env, sb.ws
		term := startTerminal(t, cmd)
		term.waitFor("ValueError")
		cmd.Wait()
		<-term.done
		term.mu.Lock()
		seen := term.seen.String()
		term.mu.Unlock()
		colour := strings.Contains(seen, "\x1b[31mred\x1b[0m")
		obeyed := strings.Contains(seen, "\x1b]52;c;") || strings.Contains(seen, "\x1b[2J") || strings.Contains(seen, "\x1b]0;pwned")
		shown := strings.Contains(seen, `\x1b]52;c;SGVsbG8=\x07`) && strings.Contains(seen, `\x1b[2J`) && strings.Contains(seen, `F \x1b]0;pwned\x07 G`)
		if !colour || obeyed == !raw || shown == raw {
			t.Errorf("raw %v: colour kept %v, escapes passed %v, shown escaped %v:\n%q", raw, colour, obeyed, shown, seen)
		}
	}
}

// TestJailHostAttachmentNames: `attachment get` does not write, by the
// name the block chose, a hidden file (.envrc), a name holding U+202E (it
// shows reversed) or a C1 control, saying why and that -o writes it.
func TestJailHostAttachmentNames(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	names := []string{".envrc", "report\u202etxt.sh", "bell\u0085name"}
	code := "for n in " + fmt.Sprintf("%q, %q, %q", names[0], names[1], names[2]) + ":\n    attach(b'export X=1\\n', filename=n)\nprint('attached')"
	contains(t, "attach", sb.block("n", code, 0).stdout, "attached")
	get := t.TempDir()
	for _, name := range names {
		cmd := sb.command("attachment", "get", "--session", "n", "--workspace", sb.ws, name)
		cmd.Dir = get
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "give -o FILE") {
			t.Errorf("get %q: %v\n%s", name, err, out)
		}
		if entries, _ := os.ReadDir(get); len(entries) != 0 {
			t.Errorf("get %q wrote %v", name, entries)
		}
		cmd = sb.command("attachment", "get", "--session", "n", "--workspace", sb.ws, name, "-o", "chosen.txt")
		cmd.Dir = get
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("get %q -o chosen.txt: %v\n%s", name, err, out)
		}
		os.Remove(filepath.Join(get, "chosen.txt"))
	}
}

// environOf is the environment pid started with.
func environOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return string(b)
}

// TestJailHostEnvironment: a session's host and child keep none of the
// starting client's secrets (an API key in its environment), whichever
// client starts them: `sandbox run` (with the early child and without),
// `sandbox defs`, the MCP server and the REPL.
func TestJailHostEnvironment(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	const key = "sk-leak-4f9e2d"
	sb := newSandbox(t, py, "MY_API_KEY="+key, "OPENAI_API_KEY="+key)
	check := func(how, name string) {
		t.Helper()
		var rec hostRecord
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(sb.home, "sandbox", "sessions", name+"-*")); len(m) == 1 {
				if rec = sb.record(m[0]); rec.HostPID > 0 && rec.ChildPID > 0 {
					break
				}
			}
		}
		if rec.HostPID == 0 || rec.ChildPID == 0 {
			t.Fatalf("%s: no host and child for session %s", how, name)
		}
		for _, pid := range []int{rec.HostPID, rec.ChildPID} {
			if env := environOf(pid); strings.Contains(env, key) || !strings.Contains(env, "VIS_HOME=") {
				t.Errorf("%s: process %d (%s) started with the client's key:\n%s", how, pid, cmdline(pid), strings.ReplaceAll(env, "\x00", "\n"))
			}
		}
	}
	r := sb.block("run", `import os; print("key" in str(os.environ))`, 0)
	contains(t, "the block's environment", r.stdout, "False")
	check("sandbox run", "run")
	late := *sb
	late.env = append(append([]string(nil), sb.env...), "VIS_SANDBOX_EARLY_CHILD=0")
	late.block("late", "pass", 0)
	check("sandbox run without the early child", "late")
	sb.run("defs", "--session", "defs")
	check("sandbox defs", "defs")

	c := connectMCP(t, sb, "--session", "mcp")
	c.python("x = 1", false)
	check("sandbox mcp", "mcp")

	cmd := exec.Command(sb.bin, "sandbox", "repl", "--session", "repl")
	cmd.Env, cmd.Dir = sb.env, sb.ws
	term := startTerminal(t, cmd)
	check("sandbox repl", "repl")
	term.send("\x04")
}

// TestJailHostSaysWhatHolds: session.access.host states the host's own
// layers (who the socket lets in, the bounds of host calls and
// attachments), and `sandbox list` says what the kernel lacks once, with
// the sessions concerned, not once per session.
func TestJailHostSaysWhatHolds(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	testenv.WriteTree(t, sb.home, map[string]string{"config.toml": "[sandbox]\nmax_attachments_mb = 300\n"})
	r := sb.block("a", `h = session.access.host
print(h["max_calls"], h["max_attachment_mb"], h["max_attachments_mb"], h["read_mb"], h["grep_rows"], h["patch_mb"])
print(h["socket"])
print("missing", session.access.kernel.get("missing", []))`, 0)
	contains(t, "session.access.host", r.stdout, "4 64 300 64 10000 16\n", "session's key")
	sb.block("b", "pass", 0)
	l := sb.run("list").stdout
	if strings.Contains(r.stdout, "missing []") {
		t.Logf("this kernel lacks nothing: list says nothing about it\n%s", l)
		return
	}
	if n := strings.Count(l, "the kernel layer lacks"); n != 1 || !strings.Contains(l, "(a, b)\n") {
		t.Errorf("list says what the kernel lacks %d times, want once for a and b:\n%s", n, l)
	}
}
