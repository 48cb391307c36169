package findpython

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Version{
		"3.12.1 (main, Dec 5 2023, 10:00:00) [GCC 12.2.0]": {3, 12, 1},
		"3.13.0rc1 (main) [Clang]":                         {3, 13, 0},
		"3.10.13+ (heads/3.10:abc)":                        {3, 10, 13},
		"3.11":                                             {3, 11, 0},
	} {
		got, err := ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "banana", "3", "x.12.1", "3.y.1"} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) accepted", bad)
		}
	}
}

func TestLibraryVersion(t *testing.T) {
	for name, want := range map[string]Version{
		"libpython3.12.so":      {3, 12, 0},
		"libpython3.12.so.1.0":  {3, 12, 0},
		"libpython3.10.dylib":   {3, 10, 0},
		"libpython3.9.so.1.0":   {3, 9, 0},
		"libpython3.100.so.1.0": {3, 100, 0},
	} {
		if got, ok := LibraryVersion(name); !ok || got != want {
			t.Errorf("LibraryVersion(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"libpython3.so", "libpython3.13t.so", "libpython3.12d.so", "libpython3.12.a", "libfoo.so", "libpython3..so", "libpython3.12.so.x"} {
		if v, ok := LibraryVersion(name); ok {
			t.Errorf("LibraryVersion(%q) = %v, want not a full CPython library", name, v)
		}
	}
}

// touch creates files (and their folders) under root.
func touch(t testing.TB, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBestLibrary(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "libpython3.9.so.1.0", "libpython3.11.so.1.0", "libpython3.11.so", "libpython3.12.so.1.0",
		"libpython3.13t.so", "libpython3.so")
	if got, want := bestLibrary(dir), filepath.Join(dir, "libpython3.12.so.1.0"); got != want {
		t.Errorf("bestLibrary = %q, want %q", got, want)
	}
	os.Remove(filepath.Join(dir, "libpython3.12.so.1.0"))
	// For one version, the shortest name: the symlink or the SONAME.
	if got, want := bestLibrary(dir), filepath.Join(dir, "libpython3.11.so"); got != want {
		t.Errorf("bestLibrary = %q, want %q", got, want)
	}
	empty := t.TempDir()
	touch(t, empty, "libpython3.9.so")
	if got := bestLibrary(empty, filepath.Join(empty, "missing")); got != "" {
		t.Errorf("bestLibrary found %q among libraries that are too old", got)
	}
}

func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	envLib := filepath.Join(root, "env", "libpython3.11.so")
	exeDir := filepath.Join(root, "bin")
	bundleLib := filepath.Join(exeDir, BundleDir, "lib", "libpython3.12.so")
	recordLib := filepath.Join(root, "rec", "libpython3.10.so")
	state := filepath.Join(root, "state")
	touch(t, root, "env/libpython3.11.so", "bin/"+BundleDir+"/lib/libpython3.12.so", "rec/libpython3.10.so")
	if err := WriteRecord(filepath.Join(state, RecordFile), Record{Library: recordLib}); err != nil {
		t.Fatal(err)
	}
	opts := Options{NativePath: envLib, ExeDir: exeDir, StateDir: state}
	steps := []struct {
		want Choice
		next func()
	}{
		{Choice{envLib, SourceEnv}, func() { opts.NativePath = "" }},
		{Choice{bundleLib, SourceBundle}, func() { os.RemoveAll(filepath.Join(exeDir, BundleDir)) }},
		{Choice{recordLib, SourceRecord}, nil},
	}
	for _, s := range steps {
		got, err := Find(opts)
		if err != nil || got != s.want {
			t.Fatalf("Find = %+v, %v; want %+v", got, err, s.want)
		}
		if s.next != nil {
			s.next()
		}
	}
	// A folder in VIS_PYTHON_NATIVE_PATH holds the library directly or in lib/.
	opts.NativePath = filepath.Join(root, "env")
	if got, err := Find(opts); err != nil || got.Library != envLib {
		t.Errorf("Find with a folder = %+v, %v; want %s", got, err, envLib)
	}
	opts.NativePath = filepath.Join(root, "nothing")
	if _, err := Find(opts); err == nil {
		t.Error("Find accepted a missing VIS_PYTHON_NATIVE_PATH")
	}
}

func TestLocate(t *testing.T) {
	root := t.TempDir()
	// pyenv and python.org layout: <prefix>/lib/libpython, <prefix>/bin.
	touch(t, root, "a/lib/libpython3.12.so", "a/lib/python3.12/os.py", "a/bin/python3.12")
	in, err := Locate(filepath.Join(root, "a/lib/libpython3.12.so"), Version{3, 12, 0}, "")
	if err != nil || in.Prefix != filepath.Join(root, "a") || in.Executable != filepath.Join(root, "a/bin/python3.12") || in.Home != "" {
		t.Errorf("Locate(pyenv layout) = %+v, %v", in, err)
	}
	// Debian layout: <prefix>/lib/<multiarch>/libpython.
	touch(t, root, "usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "usr/lib/python3.11/os.py", "usr/bin/python3.11")
	in, err = Locate(filepath.Join(root, "usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"), Version{3, 11, 2}, "")
	if err != nil || in.Prefix != filepath.Join(root, "usr") || in.Executable != filepath.Join(root, "usr/bin/python3.11") {
		t.Errorf("Locate(Debian layout) = %+v, %v", in, err)
	}
	// No python beside the library: the home must lead CPython to its
	// standard library.
	touch(t, root, "b/lib/libpython3.13.so", "b/lib/python3.13/os.py")
	in, err = Locate(filepath.Join(root, "b/lib/libpython3.13.so"), Version{3, 13, 0}, "")
	if err != nil || in.Executable != "" || in.Home != filepath.Join(root, "b") {
		t.Errorf("Locate(no executable) = %+v, %v", in, err)
	}
	// VIS_PYTHON_HOME wins, and must be an installation.
	in, err = Locate(filepath.Join(root, "b/lib/libpython3.13.so"), Version{3, 13, 0}, filepath.Join(root, "a"))
	if err == nil {
		t.Errorf("Locate accepted a home without python3.13: %+v", in)
	}
	if _, err := Locate(filepath.Join(root, "lonely/libpython3.12.so"), Version{3, 12, 0}, ""); err == nil {
		t.Error("Locate accepted a library with no standard library near it")
	}
}

func BenchmarkFindRecorded(b *testing.B) {
	root := b.TempDir()
	touch(b, root, "lib/libpython3.12.so")
	state := filepath.Join(root, "state")
	if err := WriteRecord(filepath.Join(state, RecordFile), Record{Library: filepath.Join(root, "lib/libpython3.12.so")}); err != nil {
		b.Fatal(err)
	}
	opts := Options{ExeDir: filepath.Join(root, "bin"), StateDir: state}
	for b.Loop() {
		if _, err := Find(opts); err != nil {
			b.Fatal(err)
		}
	}
}
