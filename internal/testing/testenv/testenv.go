// Package testenv gives end-to-end tests the built vis-agent binary and the
// CPython installations of this machine to compare it with.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// build is one binary built once per test process.
type build struct {
	once sync.Once
	path string
	err  error
}

var release, noHook build

// Run runs a package's tests, then removes the binaries they built: a
// TestMain of a package using Binary is os.Exit(testenv.Run(m)).
func Run(m *testing.M) int {
	code := m.Run()
	RemoveBuilt()
	return code
}

// RemoveBuilt removes the binaries this test process built (the folders
// Binary and NoHookBinary made in the temp folder).
func RemoveBuilt() {
	for _, b := range []*build{&release, &noHook} {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
	}
}

// Binary is the vis-agent binary under test: $VIS_AGENT_BIN (what `make
// test` sets), else one built once per test process, with the uv of
// bin/vis-agent-python beside it when there is one.
func Binary(t testing.TB) string {
	t.Helper()
	return release.get(t, "VIS_AGENT_BIN")
}

// NoHookBinary is the test-only binary that skips the C audit hook when
// VIS_TEST_NO_AUDIT_HOOK=1 (the visnohook tag): $VIS_AGENT_NOHOOK_BIN
// (what `make test` sets), else one built once per test process.
func NoHookBinary(t testing.TB) string {
	t.Helper()
	return noHook.get(t, "VIS_AGENT_NOHOOK_BIN", "-tags", "visnohook")
}

func (b *build) get(t testing.TB, env string, flags ...string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "vis-agent-test-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "vis-agent")
		args := append(append([]string{"build"}, flags...), "-o", b.path, "github.com/vis-agent/vis-agent/cmd/vis-agent")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		// The pinned uv that `make uv` fetched goes beside it, as in a
		// release archive.
		if root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output(); err == nil {
			bundle := filepath.Join(strings.TrimSpace(string(root)), "bin", "vis-agent-python")
			if _, err := os.Stat(bundle); err == nil {
				os.Symlink(bundle, filepath.Join(dir, "vis-agent-python"))
			}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Python is one CPython installation with a shared library.
type Python struct {
	// Name identifies it in test names: "3.12-3.12.1", "3.11-usr".
	Name       string
	Library    string
	Executable string // the installation's own python, the reference
	Version    findpython.Version
	Prefix     string
}

var (
	findOnce sync.Once
	found    []Python
)

// Pythons is FindPythons for a test, which fails when there is none.
func Pythons(t testing.TB) []Python {
	t.Helper()
	findOnce.Do(func() { found = FindPythons() })
	if len(found) == 0 {
		t.Fatal("no CPython 3.10+ shared library with its python executable found (looked in ~/.pyenv/versions and the system library folders)")
	}
	return found
}

// First is the first of Pythons, for tests that need one CPython only.
func First(t testing.TB) Python { return Pythons(t)[0] }

// FindPythons lists every CPython 3.10+ shared library on this machine that
// has its python executable beside it: pyenv's versions ($PYENV_ROOT,
// default ~/.pyenv) and the system's library folders, oldest first.
// VIS_TEST_PYTHONS, a colon-separated list of library paths, narrows the
// list.
func FindPythons() []Python {
	var libs []string
	if only := os.Getenv("VIS_TEST_PYTHONS"); only != "" {
		libs = strings.Split(only, ":")
	} else {
		root := os.Getenv("PYENV_ROOT")
		if root == "" {
			home, _ := os.UserHomeDir()
			root = filepath.Join(home, ".pyenv")
		}
		for _, pattern := range []string{
			filepath.Join(root, "versions", "*", "lib", "libpython3.*.so.1.0"),
			"/usr/lib/*-linux-gnu/libpython3.*.so.1.0",
			"/usr/lib64/libpython3.*.so.1.0",
			"/usr/local/lib/libpython3.*.so.1.0",
		} {
			m, _ := filepath.Glob(pattern)
			libs = append(libs, m...)
		}
	}
	var out []Python
	seen := map[string]bool{}
	for _, lib := range libs {
		real, err := filepath.EvalSymlinks(lib)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		v, ok := findpython.LibraryVersion(filepath.Base(lib))
		if !ok || v.Less(findpython.MinVersion) {
			continue
		}
		in, err := findpython.Locate(lib, v, "")
		if err != nil || in.Executable == "" {
			continue
		}
		out = append(out, Python{
			Name:       v.Short() + "-" + filepath.Base(in.Prefix),
			Library:    lib,
			Executable: in.Executable,
			Version:    v,
			Prefix:     in.Prefix,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Version != out[j].Version {
			return out[i].Version.Less(out[j].Version)
		}
		return out[i].Library < out[j].Library
	})
	return out
}

// WriteTree creates files under root: each name (slash-separated) maps to
// its content, and a name ending in "/" is an empty folder.
func WriteTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
