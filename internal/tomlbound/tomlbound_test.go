package tomlbound

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, src string
		ok        bool
	}{
		{"a project", "[project]\nname = \"x\"\ndependencies = [\"a\", \"b\"]\n[tool.pytest.ini_options]\nx = 1\n", true},
		{"a dotted key 32 deep", strings.Repeat("a.", 31) + "a = 1\n", true},
		{"a dotted key 33 deep", strings.Repeat("a.", 32) + "a = 1\n", false},
		{"a 50 KB dotted key", strings.Repeat("x.", 25000) + "x = 1\n", false},
		{"a table header and a key", "[" + strings.Repeat("t.", 20) + "t]\n" + strings.Repeat("k.", 12) + "k = 1\n", false},
		{"nested inline tables", "a = " + strings.Repeat("{b = ", 40) + "1" + strings.Repeat("}", 40) + "\n", false},
		{"dots in a string", "a = \"" + strings.Repeat(".", 5000) + "\"\n", true},
		{"over a MiB", "# " + strings.Repeat("x", MaxBytes) + "\n", false},
	} {
		if err := Check(c.src); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
