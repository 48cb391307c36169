package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// A wheelhouse of benchSet pure packages of benchModules modules each, a
// uv project that needs them all (not a package itself, so both tools
// install exactly the same wheels), locked once.
const (
	benchSet     = 40
	benchModules = 25
)

// sharedInstall times installing one locked set into an empty shared
// environment with --shared uv sync and with --shared -m pip install,
// alternately.
func sharedInstall(bin string, runs int) error {
	py := testenv.FindPythons()[0]
	tmp, err := os.MkdirTemp("", "cmdbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	wheels, app := filepath.Join(tmp, "wheels"), filepath.Join(tmp, "app")
	var deps []string
	for i := range benchSet {
		name := fmt.Sprintf("vb-pkg-%02d", i)
		files := map[string]string{}
		for m := range benchModules {
			files[fmt.Sprintf("vb_pkg_%02d/mod_%02d.py", i, m)] = strings.Repeat(fmt.Sprintf("def f%d(x):\n    return x + %d\n\n", m, m), 60)
		}
		files[fmt.Sprintf("vb_pkg_%02d/__init__.py", i)] = ""
		if _, err := testwheel.Write(wheels, testwheel.Spec{Name: name, Version: "1.0", Files: files}); err != nil {
			return err
		}
		deps = append(deps, fmt.Sprintf("%q", name+"==1.0"))
	}
	pyproject := "[project]\nname = \"bench-app\"\nversion = \"0.1\"\nrequires-python = \">=3.10\"\n" +
		"dependencies = [" + strings.Join(deps, ", ") + "]\n\n[tool.uv]\npackage = false\n"
	if err := os.MkdirAll(app, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(app, "pyproject.toml"), []byte(pyproject), 0o644); err != nil {
		return err
	}
	env := func(home string) []string {
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PIP_") && !strings.HasPrefix(kv, "UV_") && !strings.HasPrefix(kv, "VIS_") {
				env = append(env, kv)
			}
		}
		return append(env, "VIS_PYTHON_NATIVE_PATH="+py.Library, "VIS_HOME="+filepath.Join(tmp, home),
			"UV_CACHE_DIR="+filepath.Join(tmp, "uv-cache"), "PIP_DISABLE_PIP_VERSION_CHECK=1")
	}
	reqs := filepath.Join(tmp, "requirements.txt")
	for _, argv := range [][]string{
		{bin, "python", "uv", "lock", "--offline", "--find-links", wheels},
		{bin, "python", "uv", "export", "--frozen", "--no-hashes", "--quiet", "--output-file", reqs},
	} {
		if _, err := timeIn(app, env("setup"), argv); err != nil {
			return err
		}
	}
	uv := []string{bin, "python", "--shared", "uv", "sync", "--frozen", "--offline", "--find-links", wheels}
	pip := []string{bin, "python", "--shared", "-m", "pip", "install", "--no-index", "--find-links", wheels, "--no-deps", "--requirement", reqs}
	// Each install goes into an empty shared environment, made beforehand
	// (untimed): making it (pip unpacked into it) is the same for both.
	prepared := func(home string) ([]string, error) {
		e := env(home)
		_, err := timeIn(app, e, []string{bin, "python", "--shared", "-c", "pass"})
		return e, err
	}
	var us, ps []sample
	for i := 0; i <= runs; i++ {
		ue, err := prepared(fmt.Sprintf("uv-%d", i))
		if err != nil {
			return err
		}
		u, err := timeIn(app, ue, uv)
		if err != nil {
			return err
		}
		pe, err := prepared(fmt.Sprintf("pip-%d", i))
		if err != nil {
			return err
		}
		p, err := timeIn(app, pe, pip)
		if err != nil {
			return err
		}
		if i > 0 { // the first fills uv's cache, as any earlier install would
			us, ps = append(us, u), append(ps, p)
		}
	}
	mu, mp := median(us).wall, median(ps).wall
	fmt.Printf("\nshared install of %d locked wheels into an empty folder (CPython %s), median of %d each:\n", benchSet, py.Version.Short(), runs)
	fmt.Printf("  %-62s %10.1fms\n", "vis-agent python --shared uv sync --frozen --offline", ms(mu))
	fmt.Printf("  %-62s %10.1fms\n", "vis-agent python --shared -m pip install --no-index --no-deps -r", ms(mp))
	fmt.Printf("  uv is %.1fx faster\n", float64(mp)/float64(mu))
	return nil
}
