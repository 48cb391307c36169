package uvwrap

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// writeExe writes a shell script at path, creating its folder.
func writeExe(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeUV writes an executable that prints line for --version.
func fakeUV(t *testing.T, path, line string) {
	writeExe(t, path, "printf '%s\\n' '"+line+"'")
}

func skipOnWindows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uv is shipped for linux and darwin only")
	}
}

func TestLocateOrder(t *testing.T) {
	skipOnWindows(t)
	t.Setenv("HOME", t.TempDir()) // messages shorten paths under HOME
	exeDir, home := t.TempDir(), t.TempDir()
	bundled := filepath.Join(exeDir, "vis-agent-python", "uv")
	installed := filepath.Join(home, "python", "uv")

	_, err := Locate(exeDir, home)
	if err == nil {
		t.Fatal("Locate found uv in empty folders")
	}
	for _, want := range []string{"uv " + Pinned().Version + " is not installed", bundled, installed, "run make uv"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	fakeUV(t, installed, "uv 0.0.1")
	if got, err := Locate(exeDir, home); err != nil || got != installed {
		t.Errorf("with only VIS_HOME's uv: Locate = %q, %v; want %q", got, err, installed)
	}
	fakeUV(t, bundled, "uv 0.0.2")
	if got, err := Locate(exeDir, home); err != nil || got != bundled {
		t.Errorf("with both: Locate = %q, %v; want the bundled %q", got, err, bundled)
	}
	if got, err := Locate("", home); err != nil || got != installed {
		t.Errorf("without exeDir: Locate = %q, %v; want %q", got, err, installed)
	}
	if got, err := Locate(exeDir, ""); err != nil || got != bundled {
		t.Errorf("without visHome: Locate = %q, %v; want %q", got, err, bundled)
	}
}

func TestLocateReturnsAbsolutePath(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	fakeUV(t, filepath.Join(dir, "vis-agent-python", "uv"), "uv 0.0.1")
	t.Chdir(dir)
	got, err := Locate(".", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "vis-agent-python", "uv"); got != want {
		// t.TempDir may sit behind a symlink (macOS /var): compare files.
		a, _ := os.Stat(got)
		b, _ := os.Stat(want)
		if !filepath.IsAbs(got) || a == nil || b == nil || !os.SameFile(a, b) {
			t.Errorf("Locate(\".\", \"\") = %q, want %q", got, want)
		}
	}
}

func TestLocateSkipsUnusableFiles(t *testing.T) {
	skipOnWindows(t)
	t.Setenv("HOME", t.TempDir())
	exeDir, home := t.TempDir(), t.TempDir()
	bundled := filepath.Join(exeDir, "vis-agent-python", "uv")
	installed := filepath.Join(home, "python", "uv")

	// A folder named uv, and a uv without execute permission, are skipped
	// and named in the error.
	if err := os.MkdirAll(bundled, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(installed, []byte("#!/bin/sh\necho uv 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Locate(exeDir, home)
	if err == nil {
		t.Fatal("Locate accepted a folder and a non-executable file")
	}
	for _, want := range []string{bundled + " is a directory", installed + " is not executable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is more than one line: %q", err)
	}

	// Past the folder, an executable VIS_HOME copy is used.
	if err := os.Chmod(installed, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Locate(exeDir, home); err != nil || got != installed {
		t.Errorf("Locate = %q, %v; want %q", got, err, installed)
	}
}

func TestLocateNeverSearchesPATH(t *testing.T) {
	skipOnWindows(t)
	onPath := t.TempDir()
	fakeUV(t, filepath.Join(onPath, "uv"), "uv "+Pinned().Version)
	t.Setenv("PATH", onPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The working folder holds a uv too, as a bare-name lookup would find.
	cwd := t.TempDir()
	fakeUV(t, filepath.Join(cwd, "uv"), "uv "+Pinned().Version)
	t.Chdir(cwd)

	if got, err := Locate(t.TempDir(), t.TempDir()); err == nil {
		t.Errorf("Locate found %q with uv only on PATH and in the working folder", got)
	}
	if got, err := Locate("", ""); err == nil {
		t.Errorf("Locate(\"\", \"\") found %q", got)
	} else if !strings.Contains(err.Error(), "nowhere to look") {
		t.Errorf("Locate(\"\", \"\") error %q does not say there was nowhere to look", err)
	}
}

func TestVerifyFakes(t *testing.T) {
	skipOnWindows(t)
	t.Setenv("HOME", t.TempDir())
	v := Pinned().Version
	dir := t.TempDir()
	for _, c := range []struct {
		name, script, wantErr string // wantErr "" means Verify succeeds
	}{
		{"plain", "echo 'uv " + v + "'", ""},
		{"build note", "echo 'uv " + v + " (x86_64-unknown-linux-gnu)'", ""},
		{"old note", "echo 'uv " + v + " (0123abcd 2026-11-17)'", ""},
		{"blank line first", "echo; echo 'uv " + v + "'", ""},
		{"older", "echo 'uv 0.8.0'", "is uv 0.8.0, but vis-agent needs uv " + v + "; run make uv"},
		{"longer", "echo 'uv " + v + "0'", "is uv " + v + "0, but vis-agent needs uv " + v},
		{"prefix only", "echo 'uv " + v + ".1 (abc)'", "is uv " + v + ".1, but"},
		{"junk after", "echo 'uv " + v + " junk'", "is not uv"},
		{"not uv", "echo 'ruff 0.1.0'", `is not uv: its --version printed "ruff 0.1.0"`},
		{"silent", "true", `is not uv: its --version printed ""`},
		{"fails", "echo 'uv: broken install' >&2; exit 3", "could not report its version (exit status 3: uv: broken install); run make uv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"), "uv")
			writeExe(t, path, c.script)
			err := Verify(path)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("Verify: %v", err)
			case c.wantErr != "" && err == nil:
				t.Errorf("Verify accepted a uv whose --version runs %q", c.script)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Errorf("Verify error %q does not contain %q", err, c.wantErr)
			case err != nil && !strings.HasPrefix(err.Error(), path):
				t.Errorf("Verify error %q does not start with the path", err)
			}
		})
	}
}

func TestVerifyNotRunnable(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "uv")
	if err := Verify(missing); err == nil || !strings.Contains(err.Error(), "could not report its version") {
		t.Errorf("Verify(missing) = %v", err)
	}
	garbage := filepath.Join(dir, "uv")
	if err := os.WriteFile(garbage, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Verify(garbage); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("Verify(garbage) = %v, want a one-line error", err)
	}
}

func TestVerifyBareNameNeverSearchesPATH(t *testing.T) {
	skipOnWindows(t)
	onPath := t.TempDir()
	fakeUV(t, filepath.Join(onPath, "uv"), "uv "+Pinned().Version)
	t.Setenv("PATH", onPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Chdir(t.TempDir())
	if err := Verify("uv"); err == nil {
		t.Error("Verify(\"uv\") ran the uv on PATH")
	}
}

func TestVerifyTimesOut(t *testing.T) {
	skipOnWindows(t)
	old := verifyTimeout
	verifyTimeout = 300 * time.Millisecond
	defer func() { verifyTimeout = old }()
	path := filepath.Join(t.TempDir(), "uv")
	// Not exec: the sleeping child keeps stdout open after sh is killed.
	writeExe(t, path, "sleep 30; echo 'uv "+Pinned().Version+"'")
	start := time.Now()
	err := Verify(path)
	if err == nil || !strings.Contains(err.Error(), "gave no answer within 300ms") {
		t.Errorf("Verify = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Verify took %s to give up", d)
	}
}

// TestVerifyCached: the pin is checked once per binary, and again when
// the binary changes.
func TestVerifyCached(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	uv, record, count := filepath.Join(dir, "uv"), filepath.Join(dir, "state", "uv-verified"), filepath.Join(dir, "runs")
	// The fake counts its runs.
	writeExe(t, uv, "echo run >> '"+count+"'\necho 'uv "+Pinned().Version+"'\n")
	runs := func() int {
		data, _ := os.ReadFile(count)
		return strings.Count(string(data), "run")
	}
	for i := 0; i < 3; i++ {
		if err := VerifyCached(uv, record); err != nil {
			t.Fatal(err)
		}
	}
	if runs() != 1 {
		t.Errorf("uv ran %d times for three checks", runs())
	}
	// Another binary in its place (another size): checked again, and
	// refused when it is not the pinned uv.
	writeExe(t, uv, "echo run >> '"+count+"'\necho 'uv 0.0.1-other'\n")
	if err := VerifyCached(uv, record); err == nil || !strings.Contains(err.Error(), "is uv 0.0.1-other") {
		t.Errorf("a changed binary: %v", err)
	}
	if err := VerifyCached(uv, record); err == nil || runs() != 3 {
		t.Errorf("a refused binary is not remembered: %v, %d runs", err, runs())
	}
	// A record that cannot be written costs a check each time, no error.
	writeExe(t, uv, "echo 'uv "+Pinned().Version+"'\n")
	if err := VerifyCached(uv, filepath.Join(dir, "runs", "x")); err != nil {
		t.Errorf("unwritable record: %v", err)
	}
	if err := VerifyCached(filepath.Join(dir, "missing"), record); err == nil {
		t.Error("a missing uv passed")
	}
}
