package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestKindOf(t *testing.T) {
	for name, want := range map[string]Kind{
		"a.py": Python, "pkg/stub.pyi": Python, "A.PY": Python, "data.json": JSON, "pyproject.toml": TOML,
		"ci.yml": YAML, "k8s/app.yaml": YAML, "notes.txt": "", "Makefile": "", "tsconfig.json": "",
		"tsconfig.build.json": "", ".vscode/settings.json": "", "x.json.bak": "", "py": "",
	} {
		if got := KindOf(name); got != want {
			t.Errorf("KindOf(%q) = %q; want %q", name, got, want)
		}
	}
}

func TestParseData(t *testing.T) {
	for _, c := range []struct {
		kind      Kind
		src       string
		line, col int
		msg       string // part of the message; "" for a text that parses
	}{
		{JSON, `{"a": [1, 2], "b": null}`, 0, 0, ""},
		{JSON, "\ufeff{}", 0, 0, ""},
		{JSON, "{\n  \"a\": 1,\n}\n", 3, 1, "invalid character '}'"},
		{JSON, "{\"a\": \"é\", \"b\": tru}", 1, 20, "invalid character '}'"},
		{JSON, "[1, 2", 1, 5, "unexpected end"},
		{JSON, "", 1, 1, "unexpected end"},
		{JSON, "{} {}", 1, 4, "after top-level value"},
		{TOML, "[tool.x]\nname = \"a\"\nlist = [1, 2]\n", 0, 0, ""},
		{TOML, "a = 1\na = 2\n", 2, 7, "already been defined"},
		{TOML, "name = \"unclosed\n", 1, 17, "cannot contain newlines"},
		{YAML, "a: 1\nb:\n  - x\n  - y\n---\nc: !Ref other\n", 0, 0, ""},
		{YAML, "a: 1\nb: [1, 2\nc: 3\n", 1, 0, "did not find expected"},
		{YAML, "a: 1\na: 2\n", 2, 0, "already defined"},
		{YAML, "ok: 1\n---\nbad: : :\n", 3, 0, "mapping values are not allowed"},
		{YAML, "a: " + strings.Repeat("[", 20000), 0, 0, "max depth"},
	} {
		p, unchecked := ParseData(c.kind, c.src)
		shown := c.src[:min(len(c.src), 40)]
		if unchecked != "" {
			t.Errorf("%s %q: not checked: %s", c.kind, shown, unchecked)
			continue
		}
		if c.msg == "" {
			if p != nil {
				t.Errorf("%s %q: %+v; want it to parse", c.kind, shown, p)
			}
			continue
		}
		if p == nil || p.Line != c.line || p.Column != c.col || !strings.Contains(p.Message, c.msg) {
			t.Errorf("%s %q: %+v; want line %d column %d %q", c.kind, shown, p, c.line, c.col, c.msg)
		}
	}
}

// TestParseDataBounds: a text past a bound is not parsed, at once, and
// says why; one within the bounds is.
func TestParseDataBounds(t *testing.T) {
	dotted := func(n int) string { return strings.Repeat("x.", n-1) + "x = 1\n" }
	for _, c := range []struct {
		kind Kind
		src  string
		want string // part of the reason; "" for a text that is parsed
	}{
		{TOML, dotted(25000), "nested more than 32 deep"},
		{TOML, dotted(32), ""},
		{TOML, dotted(33), "nested more than 32 deep"},
		{TOML, "[" + strings.Repeat("a.", 20) + "a]\n" + dotted(12), "nested more than 32 deep"},
		{TOML, "[" + strings.Repeat("a.", 20) + "a]\n" + dotted(10) + "[b]\n" + dotted(30), ""},
		{TOML, "[[" + strings.Repeat("a.", 20) + "a]]\n" + dotted(11), ""},
		{TOML, "a = " + strings.Repeat("{b = ", 40) + "1" + strings.Repeat("}", 40), "nested more than 32 deep"},
		{TOML, "a = " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000), "nested more than 32 deep"},
		{TOML, `"x.x.x" = 1` + "\nb = 'a.b.c'\nc = 1.5 # x.x.x.x\n" + `d = """` + strings.Repeat("x.", 100) + `"""`, ""},
		{TOML, "a = [\n" + strings.Repeat("  [1.0, 2.0],\n", 1000) + "]\n", ""},
		{TOML, "a = \"" + strings.Repeat("x", 1<<20) + "\"", "TOML over 1 MiB"},
		{YAML, strings.Repeat("a: [1]\n", 200000), "YAML over 1 MiB"},
		{YAML, yamlKeys(5000), "mapping of more than 4096 keys"},
		{YAML, yamlKeys(4096), ""},
		{JSON, "[" + strings.Repeat("1,", 3<<20) + "1]", "JSON over 5 MiB"},
	} {
		start := time.Now()
		p, unchecked := ParseData(c.kind, c.src)
		shown := c.src[:min(len(c.src), 40)]
		if c.want == "" && (unchecked != "" || p != nil) || c.want != "" && !strings.Contains(unchecked, c.want) {
			t.Errorf("%s %q: %+v, unchecked %q; want %q", c.kind, shown, p, unchecked, c.want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s %q took %s", c.kind, shown, d)
		}
	}
}

// yamlKeys is a YAML mapping of n keys.
func yamlKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: %d\n", i, i)
	}
	return b.String()
}

// TestServeTexts: the worker answers each text in order, as ParseData.
func TestServeTexts(t *testing.T) {
	var in bytes.Buffer
	texts := []struct {
		kind Kind
		src  string
	}{{JSON, `{"a": 1}`}, {TOML, "a = \n"}, {YAML, "a: [1\n"}, {TOML, strings.Repeat("x.", 50) + "x = 1"}, {JSON, ""}}
	for _, tx := range texts {
		if err := WriteText(&in, tx.kind, tx.src); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := ServeTexts(&in, &out); err != nil {
		t.Fatal(err)
	}
	r := NewAnswerReader(&out)
	for _, tx := range texts {
		got, err := ReadParsed(r)
		p, unchecked := ParseData(tx.kind, tx.src)
		if err != nil || !reflect.DeepEqual(got, Parsed{Problem: p, Unchecked: unchecked}) {
			t.Errorf("%s %q: %+v, %v; want %+v %q", tx.kind, tx.src, got, err, p, unchecked)
		}
	}
	if _, err := ReadParsed(r); !errors.Is(err, io.EOF) {
		t.Errorf("after the last answer: %v", err)
	}
	if err := ServeTexts(strings.NewReader("json 99999999\n"), io.Discard); err == nil {
		t.Error("a text longer than the limit was read")
	}
}

func TestCaretError(t *testing.T) {
	got := caretError("{\n\t\"a\": 1,}\n", &Problem{Line: 2, Column: 9, Message: "invalid character '}'"})
	want := "line 2, column 9: invalid character '}'\n    \t\"a\": 1,}\n    \t       ^"
	if got != want {
		t.Errorf("caretError:\n%s\nwant:\n%s", got, want)
	}
	if got := caretError("x", &Problem{Message: "no place"}); got != "no place" {
		t.Errorf("caretError without a line: %q", got)
	}
}
