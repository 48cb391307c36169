package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every string a block (or a remote peer, or an archive) can set is
// hostile to the user's terminal (issue 31, item 4): each command that
// prints one shows its escape sequences and control characters as text.

// hostilePy is, as a Python string literal, what the tests set wherever a
// block can: a window title (OSC 0), a screen clear, a clipboard write
// (OSC 52), a bare carriage return, conceal (SGR 8) and a C1 CSI.
const hostilePy = `"T\x1b]0;title\x07 C\x1b[2J K\x1b]52;c;SGVsbG8=\x07 R\rH\x1b[8mZ\u009b2J"`

// hostile is hostilePy's value.
const hostile = "T\x1b]0;title\x07 C\x1b[2J K\x1b]52;c;SGVsbG8=\x07 R\rH\x1b[8mZ\u009b2J"

// rawControl finds, in what a terminal received, an escape, a BEL, a C1
// control, or a carriage return not part of the terminal's own CR LF.
var rawControl = regexp.MustCompile("\x1b|\x07|\u009b|\r[^\n]|\r$")

// shownTitle is the title sequence as a command shows it: as text, or
// escaped in JSON.
var shownTitle = regexp.MustCompile(`(\\x1b|\\u001b)\]0;title`)

// onTerminal runs vis-agent with args on a pseudo-terminal (stdin,
// stdout and stderr: each command sees a terminal where it asks) in dir,
// with env added, and returns all it printed and its status.
func (sb *sandbox) onTerminal(dir string, env []string, args ...string) (string, int) {
	sb.t.Helper()
	cmd := sb.command(args...)
	if args[0] == "config" { // vis-agent's own command
		cmd.Args = append([]string{sb.bin}, args...)
	}
	cmd.Env = append(cmd.Env, env...)
	if dir != "" {
		cmd.Dir = dir
	}
	term := startTerminal(sb.t, cmd)
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		sb.t.Fatalf("vis-agent %v hung on the terminal", args)
	}
	select {
	case <-term.done:
	case <-time.After(10 * time.Second):
	}
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.seen.String(), cmd.ProcessState.ExitCode()
}

// printsSafely runs args on a terminal and fails when a raw control
// reached it (but a carriage return, for a stream) or when shows (a
// regular expression) is not in what it printed: the hostile strings were
// printed, as text.
func (sb *sandbox) printsSafely(dir string, env []string, stream bool, shows string, args ...string) {
	sb.t.Helper()
	out, code := sb.onTerminal(dir, env, args...)
	raw := out
	if stream {
		raw = strings.ReplaceAll(raw, "\r", "")
	}
	if loc := rawControl.FindStringIndex(raw); loc != nil {
		sb.t.Errorf("%v (status %d) wrote %q raw to the terminal:\n%q", args, code, raw[loc[0]:loc[1]], out)
	} else if !regexp.MustCompile(shows).MatchString(out) {
		sb.t.Errorf("%v (status %d) does not show %s:\n%q", args, code, shows, out)
	}
}

// TestTerminalSafeCommands: every command that prints what a block sets
// (an attachment's filename, kind and media type, a docstring, its code
// and output in the journal, a line of a file it wrote under check's
// caret, a project's vis.toml), what a hand-made archive says (its
// manifest's vis_agent, an attachment's filename) and what a hostile
// --host peer answers (list rows, attachments, a filename in the "wrote"
// line, defs, an interrupt's answer, an error) shows it on a terminal
// with its escape sequences and controls as text, never raw; so does the
// REPL's attachments panel.
func TestTerminalSafeCommands(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		// The block's own code holds the sequences raw: in a comment, and
		// a statement a carriage return would draw a comment over.
		code := "x = 1  # " + strings.ReplaceAll(hostile, "\r", "") + "\nprint('drawn over')\r# a comment\x1b[8mhidden\n" +
			"def helper():\n    \"\"\"Docstring " + hostile + "\"\"\"\n" +
			"H = " + hostilePy + `
d = attach(b"data" + H.encode(), filename="notes\u009b2J.txt", kind=H, media_type="text/plain; x=" + H, commentable=True)
open("bad.py", "w").write('print("' + H.replace("\r", "") + '"\n')
open("vis.toml", "w").write('[sandbox]\n"\\u001b]0;title\\u0007 \\u009b2J" = 1\n')
print(H.replace("\r", ""))
print("id", d.id)
`
		r := sb.block("t", code, 0)
		id := regexp.MustCompile(`id (\S+)`).FindStringSubmatch(r.stdout)
		if id == nil {
			t.Fatalf("no attachment id in %q", r.stdout)
		}
		title := shownTitle.String()
		c1 := `\\u009b`
		for _, c := range []struct {
			shows string
			args  []string
			// stream: the block's bytes as run shows them, carriage
			// returns kept (progress bars)
			stream bool
		}{
			{title, []string{"run", "--session", "t", "-c", "print(H)"}, true},
			{title, []string{"run", "--session", "t", "-c", "attach(b'x', filename='again.txt', media_type='text/plain; x=' + H)"}, true},
			{title, []string{"attachments", "--session", "t"}, false},
			{title, []string{"attachments", "--session", "t", "--json"}, false},
			{title, []string{"defs", "--session", "t"}, false},
			{title, []string{"defs", "--session", "t", "helper"}, false},
			{title, []string{"defs", "--session", "t", "helper", "--details"}, false},
			{title, []string{"defs", "--session", "t", "--json"}, false},
			{`drawn over'\)\\r# a comment\\x1b\[8mhidden`, []string{"log", "--session", "t"}, false},
			{title, []string{"log", "--session", "t", "--json"}, false},
			{title, []string{"check", "bad.py"}, false},
			{title, []string{"repair", "bad.py"}, false},
			{title, []string{"config"}, false},
			{c1, []string{"attachment", "get", "--session", "t", id[1], "-o", "out.txt"}, false},
			{title, []string{"attachment", "get", "--session", "t", id[1], "-o", "-"}, true},
			{c1, []string{"attachment", "comment", "--session", "t", id[1], "--version", "1", "fine"}, false},
		} {
			sb.printsSafely("", nil, c.stream, c.shows, c.args...)
		}

		// The REPL: its attachments panel (F3) and /attachments.
		cmd := sb.command("repl", "--session", "t")
		term := startTerminal(t, cmd)
		term.waitFor(">>>")
		term.send("/attachments\r")
		term.waitFor("Attachments (2")
		term.send("\x1b[13~")
		term.waitFor("Enter views")
		term.showsNoHostile(t)

		// Hand-made archives: refused, in a line naming what they say.
		for name, manifest := range map[string]string{
			"format.zip": `{"format": 2, "vis_agent": ` + jsonString(hostile) + `}`,
			"big.zip": `{"format": 1, "vis_agent": "x", "files": [], "attachments": [{"filename": ` + jsonString(hostile) +
				`, "version": 1, "size": 1099511627776, "file": "attachments/0.bin"}]}`,
		} {
			writeZip(t, filepath.Join(sb.ws, name), map[string]string{"manifest.json": manifest})
			sb.printsSafely("", nil, false, title, "import", "--session", "i", name)
		}

		// A hostile --host peer: a stand-in for docker that answers every
		// request with the sequences.
		bin := t.TempDir()
		peer := `#!/usr/bin/env python3
import base64, json, sys
H = ` + hostilePy + `
req = json.loads(sys.stdin.readline())
op = req.get("op")
d = {"id": "a1", "filename": H, "version": 1, "kind": H, "media_type": H, "size": 4, "created": "2024-01-01T00:00:00Z"}
def send(**ev):
    print(json.dumps(ev), flush=True)
if op == "list":
    send(ev="list", data=json.dumps([{"name": H, "workspace": H, "state": H, "kernel_missing": H}]))
elif op == "attachments":
    send(ev="attachments", data=json.dumps([d]))
elif op == "attachment":
    send(ev="attachment", data=json.dumps(d))
elif op == "attachment_read":
    send(ev="data", data=base64.b64encode(b"data").decode())
    send(ev="ok")
elif op == "defs":
    send(ev="defs", data="helper()  " + H)
elif op == "interrupt":
    send(ev="ok", message=H)
else:
    send(ev="error", message=H)
`
		if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(peer), 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "VIS_SANDBOX_MUX=0"}
		for _, args := range [][]string{
			{"list"}, {"attachments"}, {"attachment", "get", "a1", "-o", "peer.txt"}, {"defs"}, {"interrupt"}, {"run", "-c", "pass"},
		} {
			sb.printsSafely("", env, false, title, append(args, "--host", "docker://box")...)
		}
	})
}

// showsNoHostile fails t when the REPL on term wrote one of hostile's
// sequences raw, and returns all the terminal received. The REPL's frames
// draw with escape sequences of their own: only the block's are looked
// for.
func (term *terminal) showsNoHostile(t *testing.T) string {
	t.Helper()
	term.mu.Lock()
	repl := term.seen.String()
	term.mu.Unlock()
	for _, seq := range []string{"\x1b]0;title", "\x1b]52;c;", "\x1b[8m", "\u009b"} {
		if strings.Contains(repl, seq) {
			t.Errorf("the REPL wrote %q raw to the terminal:\n%q", seq, repl)
		}
	}
	return repl
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeZip writes a zip archive of files at path.
func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for name, text := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(text))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}
