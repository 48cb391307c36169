package check

import (
	"strings"
	"testing"
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
		{TOML, "a = " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000), 1, 0, "nested more than 1000"},
		{YAML, "a: 1\nb:\n  - x\n  - y\n---\nc: !Ref other\n", 0, 0, ""},
		{YAML, "a: 1\nb: [1, 2\nc: 3\n", 1, 0, "did not find expected"},
		{YAML, "a: 1\na: 2\n", 2, 0, "already defined"},
		{YAML, "ok: 1\n---\nbad: : :\n", 3, 0, "mapping values are not allowed"},
		{YAML, "a: " + strings.Repeat("[", 20000), 0, 0, "max depth"},
	} {
		p := parseData(c.kind, c.src)
		shown := c.src[:min(len(c.src), 40)]
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
