package testwheel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestBuildExtensionLayout checks the extension wheel itself: tag,
// Root-Is-Purelib, RECORD, a dotted module's place, and that the same
// source gives the same bytes.
func TestBuildExtensionLayout(t *testing.T) {
	py := testenv.First(t)
	cfg, err := config(t.Context(), py.Executable)
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "vis-pkg", Version: "0.3", Files: map[string]string{"vis_pkg/__init__.py": "from ._speedups import add\n"}}
	src := strings.ReplaceAll(fastC, "vis_fast", "_speedups")
	a := BuildExtension(t, t.TempDir(), py, spec, "vis_pkg._speedups", src)
	b := BuildExtension(t, t.TempDir(), py, spec, "vis_pkg._speedups", src)
	v := fmt.Sprintf("%d%d", py.Version.Major, py.Version.Minor)
	tag := "cp" + v + "-cp" + v + "-" + cfg.Platform
	if want := "vis_pkg-0.3-" + tag + ".whl"; filepath.Base(a) != want {
		t.Errorf("wheel %s, want %s", filepath.Base(a), want)
	}
	if strings.ContainsAny(cfg.Platform, "-.") {
		t.Errorf("platform tag %q keeps '-' or '.'", cfg.Platform)
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Error("the same extension source gave different wheel bytes")
	}
	_, files := readZip(t, a)
	if _, ok := files["vis_pkg/_speedups"+cfg.ExtSuffix]; !ok {
		t.Errorf("no vis_pkg/_speedups%s in the wheel", cfg.ExtSuffix)
	}
	wantWheel := "Wheel-Version: 1.0\nGenerator: " + Generator + "\nRoot-Is-Purelib: false\nTag: " + tag + "\n"
	if got := string(files["vis_pkg-0.3.dist-info/WHEEL"]); got != wantWheel {
		t.Errorf("WHEEL:\n%s\nwant:\n%s", got, wantWheel)
	}
	checkRecord(t, files, "vis_pkg-0.3.dist-info/RECORD")
	// The module loads in the python it was built for.
	target := t.TempDir()
	zr, _ := readZip(t, a)
	for _, f := range zr.File {
		if strings.Contains(f.Name, ".dist-info/") {
			continue
		}
		p := filepath.Join(target, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, files[f.Name], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runPython(t, py, target, "import vis_pkg; assert vis_pkg.add(2, 3) == 5; print('ok')")
}

// TestBuildExtensionNoHeaders: an installation without Python.h skips the
// test with the reason. Its "python" is a script that reports a folder
// without headers.
func TestBuildExtensionNoHeaders(t *testing.T) {
	if compiler() == "" {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "python")
	script := "#!/bin/sh\necho '{\"implementation\": \"cpython\", \"include\": \"" + dir + "/include\", \"ext_suffix\": \".so\", \"platform\": \"linux-x86_64\", \"python\": \"cp312\", \"abi\": \"cp312\"}'\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	py := testenv.Python{Name: "fake", Executable: exe, Prefix: dir}
	py.Version.Major, py.Version.Minor = 3, 12
	var skipped bool
	t.Run("build", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		BuildExtension(t, t.TempDir(), py, fastSpec, "vis_fast", fastC)
	})
	if !skipped {
		t.Error("BuildExtension did not skip without Python.h")
	}
}
