package check

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	repairtest.StopWorkers()
	os.Exit(code)
}

// fileError is w's verdict on src as a module file.
func fileError(w *repairtest.Worker, src string) *protocol.SyntaxError {
	e := w.CompileFile(src)
	if e == nil {
		return nil
	}
	return &protocol.SyntaxError{Message: e.Msg, Line: e.Lineno, Column: e.Offset, Text: e.Text}
}

// asker is a Checker whose compiler knows only what it was told, as
// the host's is during a patch: each check goes round until it needs
// nothing more, and rounds counts the compiles it asked for.
type asker struct {
	w      *repairtest.Worker
	known  map[string]*protocol.SyntaxError
	rounds int
}

func newAsker(w *repairtest.Worker) *asker {
	return &asker{w: w, known: map[string]*protocol.SyntaxError{}}
}

func (a *asker) checker() Checker {
	return Checker{Minor: a.w.Minor, Version: fmt.Sprintf("3.%d", a.w.Minor), Compile: func(name, src string) (*protocol.SyntaxError, bool) {
		e, ok := a.known[src]
		return e, ok
	}}
}

func (a *asker) decide(t *testing.T, e Edit) Decision {
	t.Helper()
	for range 500 {
		d, need := a.checker().Decide(e)
		if need == "" {
			return d
		}
		if _, seen := a.known[need]; seen {
			t.Fatalf("asked twice to compile %q", need)
		}
		a.known[need] = fileError(a.w, need)
		a.rounds++
	}
	t.Fatal("the check did not settle in 500 compiles")
	return Decision{}
}

func (a *asker) text(t *testing.T, name, src string, fix bool) Verdict {
	t.Helper()
	for range 500 {
		v, need := a.checker().Text(name, src, fix)
		if need == "" {
			return v
		}
		a.known[need] = fileError(a.w, need)
	}
	t.Fatal("the check did not settle in 500 compiles")
	return Verdict{}
}

// edit is the Edit replacing old (found once) with new in before.
func edit(name, before, old, new string, beforeValid bool) Edit {
	at := strings.Index(before, old)
	if at < 0 || strings.Count(before, old) != 1 {
		panic("edit: old must occur once: " + old)
	}
	return Edit{Name: name, Before: before, After: before[:at] + new + before[at+len(old):], At: at,
		OldLen: len(old), NewLen: len(new), BeforeValid: beforeValid}
}

const module = `"""A module."""
import os


def area(w, h):
    return w * h


@decorated
def scaled(x, factor=2):
    values = [x * factor for _ in range(3)]
    return sum(values)


class Box:
    def __init__(self, w, h):
        self.size = (w, h)

    def label(self):
        return f"box {self.size[0]}x{self.size[1]}"


if os.environ.get("DEBUG"):
    print("debug")
else:
    print("quiet")
`

func TestDecidePython(t *testing.T) {
	for _, w := range repairtest.Workers(t) {
		t.Run(w.Version, func(t *testing.T) {
			for _, known := range []bool{false, true} {
				a := newAsker(w)
				// A valid edit is written as is.
				d := a.decide(t, edit("m.py", module, "return w * h", "return (w * h)", known))
				if !d.Write || !d.Valid || d.Text != strings.Replace(module, "return w * h", "return (w * h)", 1) || len(d.Fixes) > 0 || d.Checked != fmt.Sprintf("python 3.%d", w.Minor) {
					t.Fatalf("valid edit (known %v): %+v", known, d)
				}
				// A dropped closing bracket is repaired, and said so.
				d = a.decide(t, edit("m.py", module, "sum(values)", "sum(values", known))
				if !d.Write || !d.Valid || d.Text != module || len(d.Fixes) != 1 || !strings.Contains(d.Fixes[0], "line 12: added ')'") {
					t.Fatalf("dropped bracket (known %v): %+v", known, d)
				}
				if fileError(w, d.Text) != nil {
					t.Fatalf("the repair does not compile:\n%s", d.Text)
				}
				// Beyond repair: refused with Python's message and a caret.
				d = a.decide(t, edit("m.py", module, "self.size = (w, h)", "self.size = (w, h) h)", known))
				if d.Write || !strings.Contains(d.Refused, "invalid Python (it compiled before)") ||
					!strings.Contains(d.Refused, "unmatched ')'") || !strings.Contains(d.Refused, "line 17") || !strings.Contains(d.Refused, "^") {
					t.Fatalf("edit beyond repair (known %v): %+v", known, d)
				}
			}
			// A file that did not compile before may be written, and still
			// not compile: the edit may be part of the fix.
			a := newAsker(w)
			broken := strings.Replace(module, "sum(values)", "sum(values", 1)
			d := a.decide(t, edit("m.py", broken, "return w * h", "return w * h * 1", false))
			if !d.Write || d.Valid || !strings.Contains(d.Invalid, "'(' was never closed") || d.Text != strings.Replace(broken, "w * h", "w * h * 1", 1) {
				t.Fatalf("edit of a broken file: %+v", d)
			}
			// ... and the edit that fixes it parses.
			d = a.decide(t, edit("m.py", broken, "sum(values", "sum(values)", false))
			if !d.Write || !d.Valid || d.Text != module {
				t.Fatalf("the fixing edit: %+v", d)
			}
		})
	}
}

// TestDecideCompiles: an edit of a file known to compile is checked on
// the statements it touches alone, one compile of a few lines.
func TestDecideCompiles(t *testing.T) {
	w := repairtest.Newest(t)
	a := newAsker(w)
	a.decide(t, edit("m.py", module, "return w * h", "return (w * h)", true))
	if a.rounds != 1 {
		t.Fatalf("%d compiles; want 1", a.rounds)
	}
	for src := range a.known {
		if strings.Contains(src, "class Box") || !strings.HasPrefix(src, "\n\n\n\n") {
			t.Fatalf("compiled more than the edited statement:\n%s", src)
		}
	}
	// Unknown before, the whole file is compiled once.
	a = newAsker(w)
	a.decide(t, edit("m.py", module, "return w * h", "return (w * h)", false))
	if a.rounds != 1 {
		t.Fatalf("%d compiles; want 1", a.rounds)
	}
}

func TestDecideData(t *testing.T) {
	c := Checker{}
	d, _ := c.Decide(edit("cfg.json", `{"a": 1, "b": 2}`, `"b": 2`, `"b": 2,`, false))
	if d.Write || !strings.Contains(d.Refused, "invalid JSON (it parsed before)") || !strings.Contains(d.Refused, "line 1, column 17: invalid character '}'") {
		t.Fatalf("JSON broken: %+v", d)
	}
	d, _ = c.Decide(edit("cfg.json", `{"a": 1, "b": 2,}`, `"a": 1`, `"a": 3`, false))
	if !d.Write || d.Valid || !strings.Contains(d.Invalid, "invalid character '}'") {
		t.Fatalf("JSON already broken: %+v", d)
	}
	d, _ = c.Decide(edit("pyproject.toml", "[project]\nname = \"x\"\n", `"x"`, `"y"`, false))
	if !d.Write || !d.Valid || d.Checked != "toml" {
		t.Fatalf("TOML: %+v", d)
	}
	d, _ = c.Decide(edit("ci.yml", "on: push\njobs:\n  a: 1\n", "a: 1", "a: [1", false))
	if d.Write || !strings.Contains(d.Refused, "invalid YAML") {
		t.Fatalf("YAML: %+v", d)
	}
	// Without a compiler, Python files are not checked.
	d, _ = c.Decide(edit("m.py", "x = 1\n", "1", "(1", false))
	if !d.Write || d.Checked != "" {
		t.Fatalf("no compiler: %+v", d)
	}
}

func TestTextPython(t *testing.T) {
	w := repairtest.Newest(t)
	a := newAsker(w)
	if v := a.text(t, "m.py", module, true); v.Problem != nil || v.Checked == "" {
		t.Fatalf("valid module: %+v", v)
	}
	broken := strings.Replace(module, "sum(values)", "sum(values", 1)
	v := a.text(t, "m.py", broken, false)
	if v.Problem == nil || v.Problem.Line != 12 || v.Fixed != "" || !strings.Contains(v.Error, "line 12, column") {
		t.Fatalf("broken, no fix: %+v", v)
	}
	v = a.text(t, "m.py", broken, true)
	if v.Fixed != module || len(v.Fixes) != 1 {
		t.Fatalf("broken, fix: %+v", v)
	}
	// A byte order mark stays where it is, out of the repair's way.
	v = a.text(t, "m.py", bom+broken, true)
	if v.Fixed != bom+module {
		t.Fatalf("broken with a byte order mark: %+v", v)
	}
	if v := a.text(t, "notes.txt", "((", true); v.Checked != "" || v.Problem != nil {
		t.Fatalf("unchecked file: %+v", v)
	}
}

// TestChunkRules: edits whose statements compile alone while the file
// does not (a __future__ import no longer first, an assignment before a
// module-level global, a decorator or an else clause left without its
// statement) are checked on the whole file.
func TestChunkRules(t *testing.T) {
	for _, c := range []struct{ before, old, new string }{
		{"\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nx = 1\n", "\"\"\"Doc.\"\"\"\n", "\"\"\"Doc.\"\"\"\ny = 2\n"},
		{"def f():\n    pass\n\n\nglobal x\n", "def f():\n", "x = 1\ndef f():\n"},
		{"@dec\ndef f():\n    pass\n", "def f():\n    pass\n", "x = 1\n"},
		{"if a:\n    pass\nelse:\n    pass\n", "if a:\n    pass\n", "x = 1\n"},
		// In a class's body: a statement moved out of it, one indented
		// past the body's first, a method left without its decorator.
		{"class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n", "    def f(self):\n        return 1\n", "x = 1\n"},
		{"class A:\n    x = 1\n    y = 2\n", "    y = 2\n", "        y = 2\n"},
		{"class A:\n    @property\n    def f(self):\n        return 1\n", "    def f(self):\n        return 1\n", "    x = 1\n"},
		{"class A:\n    if a:\n        x = 1\n    else:\n        x = 2\n", "    if a:\n        x = 1\n", "    y = 1\n"},
	} {
		for _, w := range oldestAndNewest(t) {
			e := edit("m.py", c.before, c.old, c.new, true)
			if fileError(w, e.Before) != nil || fileError(w, e.After) == nil {
				t.Fatalf("%s: the case must compile before the edit and not after:\n%s", w.Version, e.After)
			}
			if d := newAsker(w).decide(t, e); d.Valid {
				t.Errorf("%s: %q -> %q taken for valid: %+v", w.Version, c.old, c.new, d)
			}
		}
	}
}

// oldestAndNewest are the workers of the oldest and newest CPython found.
func oldestAndNewest(t *testing.T) []*repairtest.Worker {
	ws := repairtest.Workers(t)
	oldest, newest := ws[0], ws[0]
	for _, w := range ws {
		if w.Minor < oldest.Minor {
			oldest = w
		}
		if w.Minor > newest.Minor {
			newest = w
		}
	}
	if oldest == newest {
		return []*repairtest.Worker{oldest}
	}
	return []*repairtest.Worker{oldest, newest}
}

// TestChunkSound breaks statements of the standard library's files in
// many ways and checks that whenever an edit's statements compile alone
// (the check patch() makes of a file known to compile), the whole file
// compiles too, on every CPython found.
func TestChunkSound(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles thousands of files")
	}
	inserts := []string{"(", ")", "]", "{", "\"", "'", "\"\"\"", ":", "\n", " ", "    ", "#", "\\", "\\\n", "@x\n",
		"else:\n    pass\n", "global g\n", "from __future__ import annotations\n", "x = 1\n", "    y = 2\n", "f\"{", "'''\n",
		"        z = 3\n", "  w = 4\n", "\tt = 5\n", "nonlocal q\n", "    return 1\n", "    yield 2\n", "    @staticmethod\n",
		"    def m(self):\n        pass\n", "    else:\n        pass\n", "\n    "}
	for _, w := range oldestAndNewest(t) {
		t.Run(w.Version, func(t *testing.T) {
			files := stdlibFiles(t, w)
			rng := rand.New(rand.NewPCG(uint64(w.Minor), 7))
			chunked, nested, total := 0, 0, 0
			for _, path := range files {
				data, err := os.ReadFile(path)
				if err != nil || len(data) > 200<<10 || fileError(w, string(data)) != nil {
					continue
				}
				src := string(data)
				for range 12 {
					at := rng.IntN(len(src))
					oldLen := rng.IntN(3)
					if rng.IntN(4) == 0 { // a whole line
						at = strings.LastIndexByte(src[:at], '\n') + 1
						oldLen = strings.IndexByte(src[at:], '\n') + 1
					}
					oldLen = min(max(oldLen, 1), len(src)-at)
					ins := inserts[rng.IntN(len(inserts))]
					if rng.IntN(3) == 0 {
						ins = ""
					}
					e := Edit{Name: "f.py", Before: src, After: src[:at] + ins + src[at+oldLen:], At: at, OldLen: oldLen, NewLen: len(ins), BeforeValid: true}
					total++
					e.Starts = Starts(src, w.Minor)
					sp, ok := spanOf(e, w.Minor)
					if !ok {
						continue
					}
					chunked++
					if sp.header != "" {
						nested++
					}
					if fileError(w, sp.source(e.After)) != nil {
						continue
					}
					if err := fileError(w, e.After); err != nil {
						t.Errorf("%s: replacing %q at %d with %q: the statements compile alone, the file does not: %s (line %d)\n%s",
							path, src[at:at+oldLen], at, ins, err.Message, err.Line, sp.source(e.After))
					}
					if got, want := sp.startsAfter(e, w.Minor), Starts(e.After, w.Minor); !slices.Equal(got, want) {
						t.Errorf("%s: replacing %q at %d with %q: the starts after the edit, from the span's: %v; want %v", path, src[at:at+oldLen], at, ins, got, want)
					}
				}
				if t.Failed() {
					return
				}
			}
			t.Logf("%d edits, %d checked on their statements, %d of them in a class's body", total, chunked, nested)
			if total == 0 || chunked < total/2 {
				t.Fatalf("%d of %d edits checked on their statements", chunked, total)
			}
		})
	}
}

// stdlibFiles are some of the standard library's top-level modules of
// w's CPython.
func stdlibFiles(t *testing.T, w *repairtest.Worker) []string {
	files := w.Stdlib(t)
	if len(files) > 60 {
		files = files[:60]
	}
	return files
}

func TestChunkable(t *testing.T) {
	for src, want := range map[string]bool{
		"x = 1\n":                            true,
		"# -*- coding: latin-1 -*-\nx = 1\n": false,
		"#!/usr/bin/env python\n# vim: set fileencoding=utf-8 :\n": false,
		"# the coding style, coding=x\n":                           false,
		"x = 1\ny = 2\n# coding: latin-1\n":                        true, // the third line: not a declaration
		"from __future__ import annotations\n":                     false,
		"if x:\n    global y\n":                                    false,
		"global_x = 1\n":                                           true,
		"\ufeffx = 1\n":                                            false,
	} {
		if got := chunkable(src); got != want {
			t.Errorf("chunkable(%q) = %v", src, got)
		}
	}
	for text, want := range map[string]bool{"else:": true, "elif x:": true, "except* E:": true, "finally:": true, "elsewhere = 1": false, "x = 1": false} {
		if got := continuation(text); got != want {
			t.Errorf("continuation(%q) = %v", text, got)
		}
	}
}
