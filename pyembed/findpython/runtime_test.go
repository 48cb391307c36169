package findpython

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/vis-agent/vis-agent/internal/iostreams"
)

// TestLocateRuntime: the library VIS_PYTHON_NATIVE_PATH names, its version
// from its file name and its installation, without loading it; a name that
// does not tell the version is said so, for the caller that can load it.
func TestLocateRuntime(t *testing.T) {
	root := t.TempDir()
	touch(t, root, "a/lib/libpython3.12.so", "a/lib/python3.12/os.py", "a/bin/python3.12", "stub/libpython3.so")
	streams := func(native string) iostreams.Streams {
		env := map[string]string{"VIS_PYTHON_NATIVE_PATH": native, "VIS_HOME": filepath.Join(root, "vis")}
		return iostreams.Streams{Getenv: func(k string) string { return env[k] }}
	}
	choice, v, inst, err := LocateRuntime(streams(filepath.Join(root, "a/lib/libpython3.12.so")))
	if err != nil || choice.Source != SourceEnv || v.Short() != "3.12" || inst.Executable != filepath.Join(root, "a/bin/python3.12") {
		t.Errorf("LocateRuntime = %+v, %v, %+v, %v", choice, v, inst, err)
	}
	stub := filepath.Join(root, "stub/libpython3.so")
	_, _, _, err = LocateRuntime(streams(stub))
	var unknown *UnknownVersionError
	if !errors.As(err, &unknown) || unknown.Library != stub || err.Error() != "cannot tell the CPython version of "+stub {
		t.Errorf("LocateRuntime(the stable-ABI stub) = %v, want an UnknownVersionError", err)
	}
}
