package testwheel

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// demoSpec is a wheel that uses every part of Spec.
func demoSpec() Spec {
	return Spec{
		Name:    "Vis.Demo",
		Version: "1.0.0",
		Files: map[string]string{
			"vis_demo/__init__.py": "VALUE = 42\n",
			"vis_demo/cli.py":      "def main():\n    print('hi')\n",
			"vis_demo_hook.pth":    "import vis_demo\n",
			"weird, name.txt":      "a comma in a RECORD path\n",
		},
		Requires:       []string{"vis-dep>=1.0", `vis-extra-dep; extra == "fast"`},
		Extras:         []string{"fast"},
		ConsoleScripts: map[string]string{"vis-demo": "vis_demo.cli:main", "vis-demo2": "vis_demo.cli:main"},
		Scripts:        map[string]string{"vis-plain": "#!/bin/sh\necho plain\n"},
		Data:           map[string]string{"share/vis-demo/README": "readme\n"},
		RequiresPython: ">=3.10",
	}
}

func readZip(t *testing.T, p string) (*zip.Reader, map[string][]byte) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		files[f.Name] = b
	}
	return zr, files
}

func TestBuildLayout(t *testing.T) {
	p := Build(t, t.TempDir(), demoSpec())
	if got, want := filepath.Base(p), "vis_demo-1.0.0-py3-none-any.whl"; got != want {
		t.Fatalf("wheel file %s, want %s", got, want)
	}
	zr, files := readZip(t, p)

	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !f.Modified.Equal(zipTime) {
			t.Errorf("%s: modified %v, want %v", f.Name, f.Modified, zipTime)
		}
		wantMode := os.FileMode(0o644)
		if strings.Contains(f.Name, ".data/scripts/") {
			wantMode = 0o755
		}
		if f.Mode() != wantMode {
			t.Errorf("%s: mode %v, want %v", f.Name, f.Mode(), wantMode)
		}
	}
	wantNames := []string{
		"vis_demo/__init__.py",
		"vis_demo/cli.py",
		"vis_demo_hook.pth",
		"weird, name.txt",
		"vis_demo-1.0.0.data/data/share/vis-demo/README",
		"vis_demo-1.0.0.data/scripts/vis-plain",
		"vis_demo-1.0.0.dist-info/METADATA",
		"vis_demo-1.0.0.dist-info/WHEEL",
		"vis_demo-1.0.0.dist-info/entry_points.txt",
		"vis_demo-1.0.0.dist-info/RECORD",
	}
	if strings.Join(names, "\n") != strings.Join(wantNames, "\n") {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(wantNames, "\n"))
	}

	wantMeta := "Metadata-Version: 2.1\nName: Vis.Demo\nVersion: 1.0.0\n" +
		"Summary: test wheel built by internal/testing/testwheel\nRequires-Python: >=3.10\n" +
		"Requires-Dist: vis-dep>=1.0\nRequires-Dist: vis-extra-dep; extra == \"fast\"\nProvides-Extra: fast\n"
	if got := string(files["vis_demo-1.0.0.dist-info/METADATA"]); got != wantMeta {
		t.Errorf("METADATA:\n%s\nwant:\n%s", got, wantMeta)
	}
	wantWheel := "Wheel-Version: 1.0\nGenerator: " + Generator + "\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	if got := string(files["vis_demo-1.0.0.dist-info/WHEEL"]); got != wantWheel {
		t.Errorf("WHEEL:\n%s\nwant:\n%s", got, wantWheel)
	}
	wantEP := "[console_scripts]\nvis-demo = vis_demo.cli:main\nvis-demo2 = vis_demo.cli:main\n"
	if got := string(files["vis_demo-1.0.0.dist-info/entry_points.txt"]); got != wantEP {
		t.Errorf("entry_points.txt:\n%s\nwant:\n%s", got, wantEP)
	}
	checkRecord(t, files, "vis_demo-1.0.0.dist-info/RECORD")
}

// checkRecord checks that RECORD lists every member with its right hash and
// size, and itself without.
func checkRecord(t *testing.T, files map[string][]byte, record string) {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(files[record])).ReadAll()
	if err != nil {
		t.Fatalf("RECORD: %v", err)
	}
	listed := map[string]bool{}
	for _, r := range rows {
		if len(r) != 3 {
			t.Fatalf("RECORD row %q: want 3 fields", r)
		}
		listed[r[0]] = true
		data, ok := files[r[0]]
		if !ok {
			t.Errorf("RECORD lists %s, which is not in the wheel", r[0])
			continue
		}
		if r[0] == record {
			if r[1] != "" || r[2] != "" {
				t.Errorf("RECORD lists itself with hash %q size %q, want both empty", r[1], r[2])
			}
			continue
		}
		sum := sha256.Sum256(data)
		if want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]); r[1] != want {
			t.Errorf("RECORD: %s hash %s, want %s", r[0], r[1], want)
		}
		if r[2] != strconv.Itoa(len(data)) {
			t.Errorf("RECORD: %s size %s, want %d", r[0], r[2], len(data))
		}
	}
	for name := range files {
		if !listed[name] {
			t.Errorf("%s is not in RECORD", name)
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	a, err := os.ReadFile(Build(t, t.TempDir(), demoSpec()))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ { // map order differs between runs
		b, err := os.ReadFile(Build(t, t.TempDir(), demoSpec()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("the same Spec gave different wheel bytes")
		}
	}
	s := demoSpec()
	s.Files["vis_demo/__init__.py"] = "VALUE = 43\n"
	c, err := os.ReadFile(Build(t, t.TempDir(), s))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Fatal("a different Spec gave the same bytes")
	}
}

func TestBuildTags(t *testing.T) {
	p := Build(t, t.TempDir(), Spec{
		Name: "vis_minimal", Version: "2.0",
		Files: map[string]string{"vis_minimal.py": ""},
		Tag:   "py2.py3-none-any",
	})
	if got, want := filepath.Base(p), "vis_minimal-2.0-py2.py3-none-any.whl"; got != want {
		t.Fatalf("wheel file %s, want %s", got, want)
	}
	_, files := readZip(t, p)
	if _, ok := files["vis_minimal-2.0.dist-info/entry_points.txt"]; ok {
		t.Error("entry_points.txt written without console scripts")
	}
	w := string(files["vis_minimal-2.0.dist-info/WHEEL"])
	if !strings.Contains(w, "Tag: py2-none-any\nTag: py3-none-any\n") {
		t.Errorf("WHEEL does not expand the compressed tag:\n%s", w)
	}
	checkRecord(t, files, "vis_minimal-2.0.dist-info/RECORD")
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ in, file, project string }{
		{"vis-demo", "vis_demo", "vis-demo"},
		{"Vis.Demo", "vis_demo", "vis-demo"},
		{"vis__demo-.x", "vis_demo_x", "vis-demo-x"},
		{"A", "a", "a"},
	} {
		if got := FileName(c.in); got != c.file {
			t.Errorf("FileName(%q) = %q, want %q", c.in, got, c.file)
		}
		if got := ProjectName(c.in); got != c.project {
			t.Errorf("ProjectName(%q) = %q, want %q", c.in, got, c.project)
		}
	}
	if got, want := WheelName(Spec{Name: "vis-demo", Version: "1.0"}), "vis_demo-1.0-py3-none-any.whl"; got != want {
		t.Errorf("WheelName = %q, want %q", got, want)
	}
}

func TestBadSpecs(t *testing.T) {
	ok := Spec{Name: "vis-ok", Version: "1.0", Files: map[string]string{"vis_ok.py": ""}}
	if _, _, err := wheel(ok, true, nil); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for name, edit := range map[string]func(*Spec){
		"empty name":        func(s *Spec) { s.Name = "" },
		"name with space":   func(s *Spec) { s.Name = "vis ok" },
		"name ends in dash": func(s *Spec) { s.Name = "vis-" },
		"no version":        func(s *Spec) { s.Version = "" },
		"version slash":     func(s *Spec) { s.Version = "1/0" },
		"absolute file":     func(s *Spec) { s.Files = map[string]string{"/etc/x": ""} },
		"dotdot file":       func(s *Spec) { s.Files = map[string]string{"../x.py": ""} },
		"unclean file":      func(s *Spec) { s.Files = map[string]string{"a//x.py": ""} },
		"backslash file":    func(s *Spec) { s.Files = map[string]string{`a\x.py`: ""} },
		"file in dist-info": func(s *Spec) {
			s.Files = map[string]string{"vis_ok-1.0.dist-info/METADATA": ""}
		},
		"script in folder":           func(s *Spec) { s.Scripts = map[string]string{"a/b": ""} },
		"bad tag":                    func(s *Spec) { s.Tag = "py3-none" },
		"bad extra":                  func(s *Spec) { s.Extras = []string{"a b"} },
		"newline requires":           func(s *Spec) { s.Requires = []string{"a\nName: evil"} },
		"bad entry point":            func(s *Spec) { s.ConsoleScripts = map[string]string{"x": "not a ref"} },
		"entry point without object": func(s *Spec) { s.ConsoleScripts = map[string]string{"x": "vis_ok"} },
		"bad script name":            func(s *Spec) { s.ConsoleScripts = map[string]string{"a b": "m:f"} },
	} {
		s := ok
		edit(&s)
		if _, _, err := wheel(s, true, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestIndex(t *testing.T) {
	wheels := t.TempDir()
	a := Build(t, wheels, Spec{Name: "Vis.Alpha", Version: "1.0", Files: map[string]string{"vis_alpha.py": ""}, RequiresPython: ">=3.10,<4"})
	Build(t, wheels, Spec{Name: "Vis.Alpha", Version: "2.0", Files: map[string]string{"vis_alpha.py": ""}})
	Build(t, wheels, Spec{Name: "vis-beta", Version: "1.0", Files: map[string]string{"vis_beta.py": ""}})
	index := filepath.Join(t.TempDir(), "simple")
	if got := Index(t, wheels, index); got != index {
		t.Fatalf("Index returned %s, want %s", got, index)
	}
	root, err := os.ReadFile(filepath.Join(index, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<a href="vis-alpha/">vis-alpha</a>`, `<a href="vis-beta/">vis-beta</a>`} {
		if !bytes.Contains(root, []byte(want)) {
			t.Errorf("index.html lacks %s:\n%s", want, root)
		}
	}
	page, err := os.ReadFile(filepath.Join(index, "vis-alpha", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := `<a href="vis_alpha-1.0-py3-none-any.whl#sha256=` + hex.EncodeToString(sum[:]) + `" data-requires-python="&gt;=3.10,&lt;4">`
	if !bytes.Contains(page, []byte(want)) {
		t.Errorf("vis-alpha/index.html lacks %s:\n%s", want, page)
	}
	if n := len(regexp.MustCompile(`<a href="[^"]+\.whl#sha256=[0-9a-f]{64}"`).FindAll(page, -1)); n != 2 {
		t.Errorf("vis-alpha/index.html links %d wheels, want 2:\n%s", n, page)
	}
	copied, err := os.ReadFile(filepath.Join(index, "vis-alpha", filepath.Base(a)))
	if err != nil || !bytes.Equal(copied, data) {
		t.Errorf("wheel not copied beside its page: %v", err)
	}

	base := Serve(t, index)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/simple$`).MatchString(base) {
		t.Errorf("Serve URL %s", base)
	}
	get := func(u string) []byte {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
		}
		return b
	}
	if got := get(base + "/vis-alpha/"); !bytes.Equal(got, page) {
		t.Errorf("served page differs from vis-alpha/index.html:\n%s", got)
	}
	if got := get(base + "/vis-alpha/" + filepath.Base(a)); !bytes.Equal(got, data) {
		t.Error("served wheel differs")
	}
	if got := get(base + "/"); !bytes.Equal(got, root) {
		t.Errorf("served root differs:\n%s", got)
	}
}
