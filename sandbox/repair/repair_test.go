package repair

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

func repaired(t *testing.T, src string, minor int) Result {
	t.Helper()
	res := Repair(src, Options{Minor: minor, Compile: failOriginal(src)})
	if !res.Repaired {
		t.Fatalf("not repaired: %q\n%s", src, res.Error())
	}
	return res
}

func TestFixMessages(t *testing.T) {
	tests := []struct {
		src   string
		fixes []string
	}{
		{`print("hello)`, []string{`line 1: added the missing closing " at column 13`}},
		{"value = f(\n    a,\n    bcde\nprint(value)\n", []string{`line 3: added ')' at column 9 to close '(' from line 1`}},
		{"x = [1,\n   2)\n", []string{`line 2: replaced ')' at column 5 with ']' to match '[' from line 1`}},
		{`print(f"Use brace {} and {name}")`, []string{
			`line 1: doubled the '{' at column 19 and its closing '}' in the f-string, which held text rather than an expression`}},
		{`print(“hi”, “yo”`, []string{
			`line 1: replaced the typographic quotes “ at column 7 and ” at column 10 with "`,
			`line 1: replaced the typographic quotes “ at column 13 and ” at column 16 with "`,
			`line 1: added ')' at column 17 to close '(' from line 1`}},
		{`s = 'It's'`, []string{`line 1: escaped the ' at column 8, which ended the string early`}},
		{`p = "C:\Users"`, []string{`line 1: made the string at column 5 raw so all its backslashes stay text, as in a Windows path or a regular expression`}},
		{`p = "Total\x"`, []string{`line 1: doubled the backslash at column 11 so '\x' is kept as text rather than read as an invalid escape`}},
		{"\ufeffprint(1)\n", []string{`line 1: removed the byte order mark (U+FEFF) that starts the block`}},
		{"x = (1))\n", []string{`line 1: removed the unmatched ')' at column 8`}},
	}
	for _, tt := range tests {
		res := repaired(t, tt.src, 12)
		var got []string
		for _, f := range res.Fixes {
			got = append(got, f.Message)
		}
		if strings.Join(got, "\n") != strings.Join(tt.fixes, "\n") {
			t.Errorf("%q: fixes\n%s\nwant\n%s", tt.src, strings.Join(got, "\n"), strings.Join(tt.fixes, "\n"))
		}
	}
}

func TestNote(t *testing.T) {
	src := "a = “1”\nb = “2”\nc = “3”\nd = “4”\ne = “5”\nf = “6”\ng = “7”\n"
	res := repaired(t, src, 12)
	lines := strings.Split(res.Note(), "\n")
	if lines[0] != "Repaired this block. Python refused it with invalid syntax" {
		t.Errorf("first line %q", lines[0])
	}
	if first, _, _ := strings.Cut(res.NoteWhen("before running it"), "\n"); first != "Repaired this block before running it. Python refused it with invalid syntax" {
		t.Errorf("NoteWhen: first line %q", first)
	}
	if len(lines) != 7 || lines[6] != "  and 2 more" || !strings.HasPrefix(lines[1], "  line 1: ") {
		t.Errorf("note:\n%s", res.Note())
	}
	if (Result{}).Note() != "" {
		t.Error("note for a result that was not repaired")
	}
}

func TestError(t *testing.T) {
	src := "x = 1\nprint(\"a\" \"b\" c, 'It's)\n"
	compile := func(string) *protocol.SyntaxError {
		return &protocol.SyntaxError{Message: "invalid syntax", Line: 2, Column: 15, Text: "print(\"a\" \"b\" c, 'It's)\n"}
	}
	res := Repair(src, Options{Minor: 12, Compile: compile})
	want := "SyntaxError: invalid syntax\n" +
		"line 2, column 21: the string ends at this ' right before \"s\"; a quote inside the text probably ended it early\n" +
		"    print(\"a\" \"b\" c, 'It's)\n" +
		"                        ^"
	if res.Repaired || res.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", res.Error(), want)
	}
	// No problem found: Python's position is shown instead.
	res = Repair("x = 1\nif x = 2:\n\tpass\n", Options{Minor: 12, Compile: func(string) *protocol.SyntaxError {
		return &protocol.SyntaxError{Message: "invalid syntax", Line: 2, Column: 6, Text: "if x = 2:\n"}
	}})
	if got := res.Error(); !strings.HasSuffix(got, "\n    if x = 2:\n         ^") {
		t.Errorf("Error() =\n%s", got)
	}
}

func TestUnchanged(t *testing.T) {
	ok := func(string) *protocol.SyntaxError { return nil }
	// The scanner sees problems here, but Python's word is final.
	src := `print("a)`
	res := Repair(src, Options{Minor: 12, Compile: ok})
	if res.Changed || res.Repaired || res.Source != src || res.Error() != "" || res.Note() != "" {
		t.Errorf("touched a block that compiles: %+v", res)
	}
	data, _ := json.Marshal(res)
	if want := `{"changed":false,"repaired":false,"source":"print(\"a)","fixes":[],"problems":[],"python_error":null}`; string(data) != want {
		t.Errorf("JSON %s\nwant %s", data, want)
	}
	if res := Repair(src, Options{Minor: 12}); res.Changed || len(res.Problems) == 0 {
		t.Errorf("without a compiler: %+v", res)
	}
}

func TestRefusedJSON(t *testing.T) {
	src := "print('a'\n" + strings.Repeat("x = (\n", maxListed)
	res := Repair(src, Options{Minor: 12, Compile: failOriginal(src)})
	if res.Repaired || len(res.Problems) == 0 || res.PythonError == nil {
		t.Fatalf("%+v", res)
	}
	data, _ := json.Marshal(res)
	var m struct {
		Problems    []map[string]any `json:"problems"`
		PythonError map[string]any   `json:"python_error"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Problems) != maxListed || len(m.Problems[0]) != 4 || m.Problems[0]["kind"] != KindStatementInBracket || m.PythonError["message"] != "invalid syntax" {
		t.Errorf("JSON %s", data)
	}
}

func TestScanVersions(t *testing.T) {
	tests := []struct {
		src        string
		old, new   []string // kinds before 3.12 and from 3.12 on
		oldMessage string
	}{
		{`f"{x["k"]}"`, []string{KindFStringQuote}, nil, ""},
		{`f"{'\n'.join(x)}"`, []string{KindFStringBackslash}, nil, ""},
		{"f\"{x\n}\"", []string{KindUnterminatedString, KindUnmatchedCloser, KindUnterminatedString}, nil, ""},
		{`b"\u12" + rb"\x" + r"\N" + "\d"`, nil, nil, ""},
		{`"\u12" + b"\x4"`, []string{KindInvalidEscape, KindInvalidEscape}, []string{KindInvalidEscape, KindInvalidEscape}, ""},
		{`"\N{BULLET}" + "\N{" + "\U00110000"`, []string{KindInvalidEscape, KindInvalidEscape}, []string{KindInvalidEscape, KindInvalidEscape}, ""},
		{`f"{x!r:>{w}} {y=} {{}} \N{DASH}"`, nil, nil, ""},
		{"x = [\n  1,\n  2\nreturn x\n", []string{KindStatementInBracket}, []string{KindStatementInBracket}, ""},
		{"x = (a\n  if b\n  else c)\ny = [i\nfor i in z]\n", nil, nil, ""},
		{`"a"if x else"b" + rB"c"f"d"`, nil, nil, ""},
		{`# “quoted” (`, nil, nil, ""},
		{"'''a\n''' + \"\"\"b", []string{KindUnterminatedTriple}, []string{KindUnterminatedTriple}, ""},
	}
	kinds := func(ps []Problem) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Kind)
		}
		return out
	}
	for _, tt := range tests {
		if got := kinds(scan(tt.src, 11)); strings.Join(got, ",") != strings.Join(tt.old, ",") {
			t.Errorf("scan(%q, 11) = %v, want %v", tt.src, got, tt.old)
		}
		if got := kinds(scan(tt.src, 12)); strings.Join(got, ",") != strings.Join(tt.new, ",") {
			t.Errorf("scan(%q, 12) = %v, want %v", tt.src, got, tt.new)
		}
	}
}

func TestScanColumnsCountCharacters(t *testing.T) {
	ps := scan("s = 'é' + “x”\n", 12)
	if len(ps) != 2 || ps[0].Column != 11 || ps[1].Column != 13 || ps[0].Line != 1 {
		t.Errorf("%+v", ps)
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct{ src, kind, message string }{
		{"a = (1\nb = [2\nc = {3\nd = (4\ne = [5\n", KindTooManyBracketChanges,
			"more than 4 bracket changes needed; not repaired"},
		{"x = (]][[(\n", KindTooManyBracketChanges, "more than 3 bracket changes needed on one line; not repaired"},
		// A parenthesis grouping part of an expression, and a comma
		// ending an inner call's arguments, read as deliberate places.
		{"x = (a + b * c\n", KindAmbiguous, "'(' could be closed by ')' at column 11 or 15, and Python runs both; not repaired"},
		{"x = (\n    a + b * c\n", KindAmbiguous, "'(' could be closed by ')' at line 2, column 10 or 14, and Python runs both; not repaired"},
		{"rdr = reader(StringIO(sample, self.sniff(sample))\n", KindAmbiguous,
			"'(' could be closed by ')' at column 29 or 50, and Python runs both; not repaired"},
		{`print("Hello, world)`, KindAmbiguous,
			`the string opened here could be closed by '"' at column 13 or 20, and Python runs both; not repaired`},
	}
	for _, tt := range tests {
		res := Repair(tt.src, Options{Minor: 12, Compile: failOriginal(tt.src)})
		if res.Repaired || len(res.Problems) == 0 {
			t.Errorf("%q: not refused: %+v", tt.src, res)
			continue
		}
		p := res.Problems[0]
		if p.Kind != tt.kind || p.Message != tt.message || p.Line < 1 || p.Column < 1 {
			t.Errorf("%q: first problem %+v, want %s: %s", tt.src, p, tt.kind, tt.message)
		}
		if !strings.Contains(res.Error(), "column "+strconv.Itoa(p.Column)+": "+tt.message) {
			t.Errorf("%q: Error() =\n%s", tt.src, res.Error())
		}
	}
}

// TestJSONShape: problems is a list even when none was found, and
// python_error.text is the line without its line ending.
func TestJSONShape(t *testing.T) {
	src := "x = 1\nif x = 2:\n\tpass\n"
	res := Repair(src, Options{Minor: 12, Compile: func(string) *protocol.SyntaxError {
		return &protocol.SyntaxError{Message: "invalid syntax", Line: 2, Column: 6, Text: "if x = 2:\r\n"}
	}})
	data, _ := json.Marshal(res)
	if want := `"problems":[],"python_error":{"message":"invalid syntax","line":2,"column":6,"text":"if x = 2:"}}`; !strings.HasSuffix(string(data), want) {
		t.Errorf("JSON %s\nwant suffix %s", data, want)
	}
}

// TestIndentRefusals: an indentation Python accepts at more than one
// level is refused, naming the columns; each repair has its note.
func TestIndentRefusals(t *testing.T) {
	w := repairtest.Newest(t)
	tests := []struct{ src, message string }{
		{"for x in values:\n    if x:\n        print(x)\n  total = x\n",
			"this line could start at column 1 or 5, and Python runs each; not repaired"},
		{"def f(items):\n    for item in items:\n        total = item\n            print(total)\n",
			"this line could start at column 1 or 5 or 9, and Python runs each; not repaired"},
		{"if ready:\n    if verbose:\n        print(1)\n\tstart()\n",
			"the tabs of the indentation could be 4 or 8 columns wide, and Python runs both; not repaired"},
	}
	for _, tt := range tests {
		res := Repair(tt.src, Options{Minor: w.Minor, Compile: compiler(w)})
		if res.Repaired || len(res.Problems) == 0 {
			t.Errorf("%q: not refused: %+v", tt.src, res)
			continue
		}
		if p := res.Problems[0]; p.Kind != KindAmbiguous || p.Message != tt.message || p.Column != 1 {
			t.Errorf("%q: first problem %+v, want %q", tt.src, p, tt.message)
		}
	}
	repairs := []struct{ src, kind, message string }{
		{"    x = 1\n    print(x)\n", fixDedent,
			"line 1: removed the indentation of 4 spaces that every line of the block starts with, as a block pasted from deeper code has"},
		{"def f(x):\n    y = x\n        return y\n", fixDedent,
			"line 3: moved line 3 from column 9 to column 5, the only level open there that Python accepts"},
		{"def f(x):\n    if x:\n        return 1\n   return 0\n", fixRealign,
			"line 4: moved line 4 from column 4 to column 5, the only outer indentation level Python accepts there"},
		{"if x:\n    if y:\n\t\tz()\n", fixExpandTabs,
			"line 3: replaced the tabs of the indentation with spaces, 4 columns a tab, as every width that makes the block's indentation consistent gives the same program"},
	}
	for _, tt := range repairs {
		res := Repair(tt.src, Options{Minor: w.Minor, Compile: compiler(w)})
		if !res.Repaired || len(res.Fixes) != 1 || res.Fixes[0].Kind != tt.kind || res.Fixes[0].Message != tt.message {
			t.Errorf("%q: %+v, want one fix %s: %q", tt.src, res, tt.kind, tt.message)
		}
	}
}
