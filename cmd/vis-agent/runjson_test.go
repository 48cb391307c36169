package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestSandboxRunJSON: `sandbox run --json` prints one object once the
// block ended, with the keys docs/sessions.md lists (checks only when a file no
// longer parses): stdout holds both streams and the trailing expression's
// repr (not with --no-echo), the error its fields but not the traceback,
// the repair note, the restart notice and the attachments have their own
// keys, and the status is the block's.
func TestSandboxRunJSON(t *testing.T) {
	t.Parallel()
	keys := []string{"attachments", "duration_ms", "error", "notice", "repair_note", "repaired", "restarted", "session", "stdout", "timed_out", "workspace"}
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			one := func(want int, args ...string) map[string]any {
				t.Helper()
				r := sb.run(append([]string{"run", "--json", "--session", "j"}, args...)...)
				dec := json.NewDecoder(strings.NewReader(r.stdout))
				var v map[string]any
				if err := dec.Decode(&v); err != nil || r.code != want {
					t.Fatalf("status %d (want %d), %v:\n%s\nstderr: %s", r.code, want, err, r.stdout, r.stderr)
				}
				if err := dec.Decode(new(any)); err != io.EOF {
					t.Errorf("more than one object: %s", r.stdout)
				}
				got := make([]string, 0, len(v))
				for k := range v {
					got = append(got, k)
				}
				slices.Sort(got)
				if !slices.Equal(got, keys) {
					t.Errorf("keys %v, want %v", got, keys)
				}
				if r.stderr != "" {
					t.Errorf("stderr: %q", r.stderr)
				}
				return v
			}
			v := one(0, "-c", "import sys\nprint('a')\nprint('e', file=sys.stderr)\n41 + 1")
			if v["stdout"] != "a\ne\n42\n" || v["error"] != nil || v["session"] != "j" || v["workspace"] != sb.ws || v["restarted"] != false {
				t.Errorf("a block: %v", v)
			}
			if v := one(0, "--no-echo", "-c", "41 + 1"); v["stdout"] != "" {
				t.Errorf("--no-echo: %v", v)
			}
			v = one(1, "-c", "print('before')\n1/0")
			e, _ := v["error"].(map[string]any)
			if v["stdout"] != "before\n" || e["type"] != "ZeroDivisionError" || e["message"] != "division by zero" || e["line"] != 2.0 || e["traceback"] != nil {
				t.Errorf("an error: %v", v)
			}
			if v := one(0, "-c", "print('x'"); v["repaired"] != true || v["stdout"] != "x\n" || !strings.Contains(v["repair_note"].(string), "added ')'") {
				t.Errorf("a repair: %v", v)
			}
			sb.run("restart", "--session", "j")
			v = one(0, "-c", "attach(b'data', 'f.txt')\nNone")
			a, _ := v["attachments"].([]any)
			if v["restarted"] != true || !strings.HasPrefix(v["notice"].(string), "[Sandbox restarted]") || strings.Contains(v["stdout"].(string), "[Sandbox restarted]") || len(a) != 1 {
				t.Fatalf("a restart and an attachment: %v", v)
			}
			if d := a[0].(map[string]any); d["filename"] != "f.txt" || d["version"] != 1.0 || d["size"] != 4.0 || d["media_type"] != "text/plain" {
				t.Errorf("the attachment: %v", d)
			}
		})
	}
}
