package testwheel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// pythonConfig is what BuildExtension learns from a python executable.
type pythonConfig struct {
	Include   string // folder holding Python.h
	ExtSuffix string // ".cpython-312-x86_64-linux-gnu.so"
	Platform  string // wheel platform tag: "linux_x86_64"
	Tag       string // wheel tag for an extension: "cp312-cp312-linux_x86_64"
}

// configScript prints the build configuration of the running CPython as
// JSON.
const configScript = `
import json, sys, sysconfig
v = sys.version_info
cfg = sysconfig.get_config_var
abi = "cp%d%d" % (v[0], v[1])
if cfg("Py_GIL_DISABLED"):
    abi += "t"
if cfg("Py_DEBUG"):
    abi += "d"
print(json.dumps({
    "implementation": sys.implementation.name,
    "include": sysconfig.get_paths()["include"],
    "ext_suffix": cfg("EXT_SUFFIX") or "",
    "platform": sysconfig.get_platform(),
    "python": "cp%d%d" % (v[0], v[1]),
    "abi": abi,
}))
`

// config asks the python executable exe for its extension build
// configuration.
func config(ctx context.Context, exe string) (pythonConfig, error) {
	cmd := exec.CommandContext(ctx, exe, "-I", "-c", configScript)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return pythonConfig{}, fmt.Errorf("%s: %w\n%s", exe, err, stderr.Bytes())
	}
	var raw struct {
		Implementation string `json:"implementation"`
		Include        string `json:"include"`
		ExtSuffix      string `json:"ext_suffix"`
		Platform       string `json:"platform"`
		Python         string `json:"python"`
		Abi            string `json:"abi"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		return pythonConfig{}, fmt.Errorf("%s: reading its sysconfig: %w\n%s", exe, err, out)
	}
	if raw.Implementation != "cpython" {
		return pythonConfig{}, fmt.Errorf("%s is %s, not CPython", exe, raw.Implementation)
	}
	if raw.ExtSuffix == "" {
		return pythonConfig{}, fmt.Errorf("%s: sysconfig has no EXT_SUFFIX", exe)
	}
	plat := strings.NewReplacer("-", "_", ".", "_").Replace(raw.Platform)
	return pythonConfig{
		Include:   raw.Include,
		ExtSuffix: raw.ExtSuffix,
		Platform:  plat,
		Tag:       raw.Python + "-" + raw.Abi + "-" + plat,
	}, nil
}

// compiler is the C compiler BuildExtension uses: $CC when it names an
// executable, else cc, else gcc; "" when there is none.
func compiler() string {
	var names []string
	if cc := strings.TrimSpace(os.Getenv("CC")); cc != "" && !strings.ContainsAny(cc, " \t") {
		names = append(names, cc)
	}
	names = append(names, "cc", "gcc")
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// BuildExtension compiles a C extension module `module` from C source with the
// machine's compiler (gcc/cc) against py's headers (<prefix>/include/python3.X,
// found via the python executable: sysconfig.get_paths()["include"] and the
// EXT_SUFFIX config var, so the .so is named e.g. vis_fast.cpython-312-x86_64-linux-gnu.so),
// and packs it (plus s.Files) into a wheel tagged for that CPython and platform
// (cp312-cp312-linux_x86_64; the platform is sysconfig.get_platform() with
// '-' and '.' replaced by '_'), with Root-Is-Purelib false. A non-empty s.Tag
// overrides that tag. module may be dotted ("vis_pkg._speedups"): the .so
// goes into that package folder and the source's PyInit_ function is named
// after the last part. Skips the test (t.Skip with a clear reason) only when
// no C compiler or no Python headers exist; anything else that goes wrong
// fails it. Returns the wheel's path in dir.
func BuildExtension(t testing.TB, dir string, py testenv.Python, s Spec, module, csource string) string {
	t.Helper()
	parts := strings.Split(module, ".")
	for _, p := range parts {
		if !identRE.MatchString(p) {
			t.Fatalf("testwheel: extension module name %q is not a dotted Python identifier", module)
		}
	}
	cc := compiler()
	if cc == "" {
		t.Skip("testwheel: no C compiler (cc, gcc or $CC) on PATH to build a C extension")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cfg, err := config(ctx, py.Executable)
	if err != nil {
		t.Fatalf("testwheel: %v", err)
	}
	include := cfg.Include
	if !fileExists(filepath.Join(include, "Python.h")) {
		// A relocated installation may report its build-time folder.
		alt := filepath.Join(py.Prefix, "include", "python"+py.Version.Short())
		if !fileExists(filepath.Join(alt, "Python.h")) {
			t.Skipf("testwheel: no Python headers for %s: no Python.h in %s or %s (install the python%s-dev package)", py.Executable, include, alt, py.Version.Short())
		}
		include = alt
	}

	work := t.TempDir()
	src := parts[len(parts)-1] + ".c"
	if err := os.WriteFile(filepath.Join(work, src), []byte(csource), 0o644); err != nil {
		t.Fatalf("testwheel: %v", err)
	}
	so := parts[len(parts)-1] + cfg.ExtSuffix
	args := []string{"-shared", "-fPIC", "-O2", "-I", include, "-o", so, src}
	if runtime.GOOS == "darwin" {
		args = append([]string{"-undefined", "dynamic_lookup"}, args...)
	}
	cmd := exec.CommandContext(ctx, cc, args...)
	// Relative names and a fixed folder keep the build's paths out of the
	// .so, so the same source gives the same wheel.
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("testwheel: compiling %s for %s failed: %s %s: %v\n%s", module, py.Name, cc, strings.Join(args, " "), err, out)
		}
		t.Fatalf("testwheel: running %s: %v", cc, err)
	}
	lib, err := os.ReadFile(filepath.Join(work, so))
	if err != nil {
		t.Fatalf("testwheel: %v", err)
	}

	if s.Tag == "" {
		s.Tag = cfg.Tag
	}
	member := strings.Join(parts[:len(parts)-1], "/")
	if member != "" {
		member += "/"
	}
	member += so
	name, data, err := wheel(s, false, map[string][]byte{member: lib})
	if err != nil {
		t.Fatalf("testwheel: %v", err)
	}
	return write(t, dir, name, data)
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
