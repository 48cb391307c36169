package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxExportImport moves a session to another Vis home under
// another name: helpers, variables, a 100 MB array (spilled), an
// attachment and its comment come back, and the first block says the
// session was imported. A truncated archive, or one for a session that
// exists, is refused in one line with nothing created.
func TestSandboxExportImport(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			sb := newSandbox(t, py)
			sb.block("e", "def helper(n):\n    return n * 2\nv = {'a': 1}\nimport array, hashlib, os\n"+
				"arr = array.array('B', os.urandom(100 << 20))\nchk = hashlib.sha256(arr).hexdigest()\n"+
				"attach(b'hello', filename='n.txt', commentable=True)", 0)
			sb.ok("attachment", "comment", "n.txt", "--session", "e", "--version", "-1", "nice work")
			if len(sb.spillFiles("e")) != 1 {
				t.Fatalf("the array was not spilled: %v", sb.spillFiles("e"))
			}
			archive := filepath.Join(t.TempDir(), "e.zip")
			sb.ok("export", "--session", "e", "-o", archive)
			sb.failsWith(1, "exists: give --force", "export", "--session", "e", "-o", archive)

			other := newSandbox(t, py)
			r := other.ok("import", archive, "--session", "moved")
			contains(t, "import", r.stderr, "imported session moved", "1 attachment versions")
			r = other.block("moved", "print(helper(21), v, len(arr), hashlib.sha256(arr).hexdigest() == chk)\n"+
				"print(get_attachment('n.txt').get('comments'))", 0)
			contains(t, "the imported session's first block", r.stdout, "[Sandbox restarted]", "imported from an archive of session e",
				"42 {'a': 1} 104857600 True", "nice work")
			if len(other.spillFiles("moved")) != 1 {
				t.Errorf("the imported spill files: %v", other.spillFiles("moved"))
			}
			contains(t, "the imported attachments", other.ok("attachments", "--session", "moved").stdout, "n.txt")

			// Refused whole, nothing created.
			data, err := os.ReadFile(archive)
			if err != nil {
				t.Fatal(err)
			}
			truncated := filepath.Join(t.TempDir(), "truncated.zip")
			os.WriteFile(truncated, data[:len(data)-100], 0o600)
			other.failsWith(1, "not a whole vis-agent session archive", "import", truncated, "--session", "t2")
			other.failsWith(1, `session "moved" of workspace`, "import", archive, "--session", "moved")
			entries, _ := os.ReadDir(filepath.Join(other.home, "sandbox", "sessions"))
			if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "moved-") {
				t.Errorf("sessions after the refused imports: %v", entries)
			}
		})
	}
}
