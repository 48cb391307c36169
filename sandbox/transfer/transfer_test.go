package transfer

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/session"
)

var testLimits = Limits{StateBytes: 64 << 20, AttachmentBytes: 1 << 20, AttachmentsSum: 4 << 20}

// exported makes a session folder with a snapshot, a block counter and a
// spill file (and what the jailed code may have left beside them), and
// exports it.
func exported(t *testing.T) (session.Meta, []byte) {
	t.Helper()
	root := t.TempDir()
	m := session.Meta{Name: "s", Workspace: t.TempDir()}
	f, err := session.Create(root, m)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		p := filepath.Join(f.StateDir(), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(snapshotFile, SnapshotMagic+"rest of the snapshot")
	write(countFile, "3")
	write("spill/abc123", strings.Repeat("spilled ", 1000))
	// What a jailed block may have put there: not exported.
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	os.Symlink(secret, filepath.Join(f.StateDir(), "spill", "linked"))
	os.WriteFile(filepath.Join(f.StateDir(), "spill", ".tmp-1"), []byte("temp"), 0o600)
	var buf bytes.Buffer
	if err := Export(Source{Folder: f, Meta: m, Attachments: filepath.Join(root, "none"), VisAgent: "test", Protocol: 1, MaxStateBytes: 1 << 20}, &buf); err != nil {
		t.Fatal(err)
	}
	return m, buf.Bytes()
}

func importBytes(t *testing.T, data []byte, sessions string) (session.Meta, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.zip")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, got, err := importFile(t, p, Target{Sessions: sessions, Meta: session.Meta{Name: "new", Workspace: "/w"}, Attachments: filepath.Join(t.TempDir(), "att"), Limits: testLimits})
	return got, err
}

// importFile imports the archive at p.
func importFile(t *testing.T, p string, target Target) (Manifest, session.Meta, error) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Import(f, p, target)
}

func TestExportImport(t *testing.T) {
	_, data := exported(t)
	sessions := t.TempDir()
	got, err := importBytes(t, data, sessions)
	if err != nil {
		t.Fatal(err)
	}
	f := session.Find(sessions, got)
	for name, want := range map[string]string{snapshotFile: SnapshotMagic + "rest of the snapshot", countFile: "3", "spill/abc123": strings.Repeat("spilled ", 1000)} {
		if b, err := os.ReadFile(filepath.Join(f.StateDir(), name)); string(b) != want {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	for _, name := range []string{"spill/linked", "spill/.tmp-1"} {
		if _, err := os.Lstat(filepath.Join(f.StateDir(), name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was exported: %v", name, err)
		}
	}
	if m, err := f.Meta(); err != nil || m != got {
		t.Errorf("the imported session's meta: %+v %v", m, err)
	}
	entries, _ := os.ReadDir(sessions)
	if len(entries) != 1 {
		t.Errorf("the sessions folder holds %v", entries)
	}
}

// rezip rewrites an archive with edit applied to its entries (name →
// bytes) and its manifest.
func rezip(t *testing.T, data []byte, edit func(files map[string][]byte, m *Manifest), extra ...func(*zip.Writer)) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var order []string
	for _, f := range zr.File {
		r, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(r)
		r.Close()
		files[f.Name] = b.Bytes()
		order = append(order, f.Name)
	}
	var m Manifest
	json.Unmarshal(files[manifestName], &m)
	edit(files, &m)
	files[manifestName], _ = json.Marshal(m)
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	seen := map[string]bool{}
	for _, name := range append(order, mapKeys(files)...) {
		if seen[name] || files[name] == nil {
			continue
		}
		seen[name] = true
		w, _ := zw.Create(name)
		w.Write(files[name])
	}
	for _, x := range extra {
		x(zw)
	}
	zw.Close()
	return out.Bytes()
}

func mapKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// A hostile or damaged archive is refused and leaves nothing.
func TestImportRefuses(t *testing.T) {
	_, data := exported(t)
	spill := "state/spill/abc123"
	addFile := func(name string, content []byte) func(map[string][]byte, *Manifest) {
		return func(files map[string][]byte, m *Manifest) {
			files[name] = content
			m.Files = append(m.Files, File{Path: name, Size: int64(len(content)), SHA256: sum(content)})
		}
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", data[:len(data)/2], "not a whole"},
		{"truncated near the end", data[:len(data)-10], "not a whole"},
		{"empty", nil, "not a whole"},
		{"a changed byte, its sum kept", rezip(t, data, func(files map[string][]byte, m *Manifest) {
			files[spill] = bytes.Replace(files[spill], []byte("spilled"), []byte("SPILLED"), 1)
		}), "does not match its size and SHA-256"},
		{"a longer file", rezip(t, data, func(files map[string][]byte, m *Manifest) { files[spill] = append(files[spill], 'x') }), "its manifest says"},
		{"a parent path", rezip(t, data, addFile("state/spill/../../../x", []byte("x"))), `names "state/spill/../../../x"`},
		{"an absolute path", rezip(t, data, addFile("/tmp/x", []byte("x"))), `names "/tmp/x"`},
		{"a path beside the state", rezip(t, data, addFile("state/../key", []byte("x"))), `names "state/../key"`},
		{"the session's own file", rezip(t, data, addFile("session.json", []byte("{}"))), `names "session.json"`},
		{"a hidden spill file", rezip(t, data, addFile("state/spill/.x", []byte("x"))), `names "state/spill/.x"`},
		{"an unlisted file", rezip(t, data, func(files map[string][]byte, m *Manifest) { files["state/spill/zzz"] = []byte("x") }), "its manifest lists"},
		{"a listed file missing", rezip(t, data, func(files map[string][]byte, m *Manifest) { delete(files, spill) }), "its manifest lists"},
		{"a symlink", rezip(t, data, func(map[string][]byte, *Manifest) {}, func(zw *zip.Writer) {
			h := &zip.FileHeader{Name: "state/spill/link"}
			h.SetMode(fs.ModeSymlink | 0o777)
			w, _ := zw.CreateHeader(h)
			w.Write([]byte("/etc/passwd"))
		}), "not a regular file"},
		{"a folder", rezip(t, data, func(map[string][]byte, *Manifest) {}, func(zw *zip.Writer) { zw.Create("state/spill/") }), "not a regular file"},
		{"a device", rezip(t, data, func(map[string][]byte, *Manifest) {}, func(zw *zip.Writer) {
			h := &zip.FileHeader{Name: "state/spill/dev"}
			h.SetMode(fs.ModeDevice | 0o666)
			zw.CreateHeader(h)
		}), "not a regular file"},
		{"over the limit", rezip(t, data, addFile("state/spill/big", bytes.Repeat([]byte("b"), 65<<20))), "over the limit"},
		{"another snapshot format", rezip(t, data, func(files map[string][]byte, m *Manifest) { m.Snapshot = "VISSNAP9" }), "another format"},
		{"a snapshot not as the manifest says", rezip(t, data, func(files map[string][]byte, m *Manifest) {
			b := append([]byte("VISSNAP2"), files["state/snapshot.bin"][8:]...)
			files["state/snapshot.bin"] = b
			for i := range m.Files {
				if m.Files[i].Path == "state/snapshot.bin" {
					m.Files[i].SHA256 = sum(b)
				}
			}
		}), "does not start as its manifest says"},
		{"no snapshot format", rezip(t, data, func(files map[string][]byte, m *Manifest) { m.Snapshot = "" }), "names no snapshot format"},
		{"another archive format", rezip(t, data, func(files map[string][]byte, m *Manifest) { m.Format = 2 }), "format 2"},
		{"a bad session name", rezip(t, data, func(files map[string][]byte, m *Manifest) { m.Session.Name = "../x" }), "invalid session name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sessions := t.TempDir()
			p := filepath.Join(t.TempDir(), "a.zip")
			os.WriteFile(p, c.data, 0o600)
			meta := session.Meta{Name: "new", Workspace: "/w"}
			if c.name == "a bad session name" {
				meta.Name = ""
			}
			_, _, err := importFile(t, p, Target{Sessions: sessions, Meta: meta, Attachments: filepath.Join(sessions, "att"), Limits: testLimits})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Import = %v, want an error with %q", err, c.want)
			}
			if entries, _ := os.ReadDir(sessions); len(entries) != 0 {
				t.Errorf("a refused import left %v", entries)
			}
		})
	}
}

// The Python side's magic is the one Import accepts.
func TestSnapshotMagicIsThePythonOne(t *testing.T) {
	src, err := os.ReadFile("../child/py/vis_sandbox/snapfile.py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `MAGIC = b"`+SnapshotMagic+`"`) {
		t.Errorf("snapfile.py's MAGIC is not %q", SnapshotMagic)
	}
}
