package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testenv"
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
	py := testenv.First(t)
	sb := newSandbox(t, py)
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
	for _, first := range []string{"", `{"v":1,"key":"` + strings.Repeat("0", 64) + `"}` + "\n"} {
		conn, err := net.Dial("unix", filepath.Join(sb.folder("victim"), "sock"))
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
