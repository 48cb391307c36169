package main

import (
	"debug/elf"
	"runtime"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestNoLibpythonLinked: the binary loads CPython at run time only; no
// libpython is among the libraries the dynamic linker loads for it.
func TestNoLibpythonLinked(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("ELF only")
	}
	f, err := elf.Open(testenv.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if strings.Contains(l, "python") {
			t.Errorf("the binary links %s", l)
		}
	}
	if len(libs) == 0 {
		t.Error("the binary links no C library; a static binary cannot dlopen libpython")
	}
}
