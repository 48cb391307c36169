package main

import (
	"strings"
	"testing"
)

// The fourth red team's part of the escape corpus (after rewind, fork and
// one path resolver): attacks on what a session's history, its rewinds
// and its forks hand to unjailed readers, each run with the C audit hook
// and without it (the test-only binary), on the oldest and newest CPython.

// TestSandboxJailReplShowsSessionTextAsText: the REPL drew what a session
// set straight to the terminal wherever it was not a block's output: a
// rewind's notice (the names of the files the rewound blocks wrote, which
// a block chooses), /defs' answer and the defs panel (a variable's name is
// any string a block puts in globals(), a docstring any text), a
// traceback's message and a restart's notice (the names it restored). A
// conceal (SGR 8) and a C1 CSI reached the terminal raw. Each shows as
// text, as the commands show it.
func TestSandboxJailReplShowsSessionTextAsText(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("t", "H = "+hostilePy+"\ndef helper():\n    pass\nhelper.__doc__ = 'Doc ' + H\nglobals()[H] = 1", 0)
		sb.block("t", "open(H.replace('\\r', '') + '.json', 'w').write('{}')", 0)
		term := startTerminal(t, sb.command("repl", "--session", "t"))
		term.waitFor(">>>")
		term.send("/rewind\r")
		term.waitFor("Files are not rewound")
		term.send("/defs\r")
		term.waitFor("Rewind can go")
		term.send("raise ValueError(H)\r")
		term.waitFor("ValueError")
		term.send("/restart\r")
		term.waitFor("restored from the snapshot")
		term.send("print('done', 6 * 7)\r") // its notice names what was restored
		term.waitFor("done 42")
		term.mu.Lock()
		repl := term.seen.String()
		term.mu.Unlock()
		for _, seq := range []string{"\x1b]0;title", "\x1b]52;c;", "\x1b[8m", "\u009b"} {
			if strings.Contains(repl, seq) {
				t.Errorf("the REPL wrote %q raw to the terminal:\n%q", seq, repl)
			}
		}
		if !strings.Contains(repl, `\x1b[8m`) {
			t.Errorf("the hostile names are not shown as text:\n%q", repl)
		}
	})
}
