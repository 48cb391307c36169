// Command testguard runs the test suite with HOME and VIS_HOME pointed at
// empty folders of its own, then fails when anything was written there:
// a test must write only inside its own temp folders, never into the
// caller's home or vis-agent's. The caller's Go folders and toolchains
// (GOCACHE, GOMODCACHE, GOPATH, PYENV_ROOT, CARGO_HOME, RUSTUP_HOME) are
// passed on as they resolve for the caller, so builds stay cached and
// python3 still resolves; the go command's own settings (.config/go) are
// not counted.
//
//	go run ./internal/testing/testguard -- COMMAND [ARG...]
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: testguard -- COMMAND [ARG...]")
		os.Exit(2)
	}
	os.Exit(run(args))
}

func run(args []string) int {
	guard, err := os.MkdirTemp("", "vis-testguard-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "testguard: %v\n", err)
		return 1
	}
	defer os.RemoveAll(guard)
	home, vis := filepath.Join(guard, "home"), filepath.Join(guard, "vis")
	for _, d := range []string{home, vis} {
		if err := os.Mkdir(d, 0o700); err != nil {
			fmt.Fprintf(os.Stderr, "testguard: %v\n", err)
			return 1
		}
	}
	env := append(os.Environ(), "HOME="+home, "VIS_HOME="+vis)
	env = append(env, keptFolders()...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	status := 0
	if err := cmd.Run(); err != nil {
		status = 1
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() > 0 {
			status = ee.ExitCode()
		} else {
			fmt.Fprintf(os.Stderr, "testguard: %v\n", err)
		}
	}
	if written := entries(guard, 40); len(written) > 0 {
		fmt.Fprintf(os.Stderr, "testguard: the tests wrote into HOME or VIS_HOME, which only their own temp folders may take:\n  %s\n",
			strings.Join(written, "\n  "))
		if status == 0 {
			status = 1
		}
	}
	return status
}

// keptFolders are the caller's Go and pyenv folders, as they resolve with
// the caller's HOME.
func keptFolders() []string {
	var env []string
	for _, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if out, err := exec.Command("go", "env", name).Output(); err == nil {
			env = append(env, name+"="+strings.TrimSpace(string(out)))
		}
	}
	// Tool managers found through PATH (pyenv's python3 shim, rustup's
	// proxies) keep their own folders.
	h, _ := os.UserHomeDir()
	for name, dflt := range map[string]string{"PYENV_ROOT": ".pyenv", "CARGO_HOME": ".cargo", "RUSTUP_HOME": ".rustup"} {
		if v := os.Getenv(name); v != "" {
			env = append(env, name+"="+v)
		} else if _, err := os.Stat(filepath.Join(h, dflt)); h != "" && err == nil {
			env = append(env, name+"="+filepath.Join(h, dflt))
		}
	}
	return env
}

// entries lists up to max paths, three levels deep at most, below the
// guard's home and vis folders.
func entries(guard string, max int) []string {
	var out []string
	for _, top := range []string{"home", "vis"} {
		root := filepath.Join(guard, top)
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(guard, path)
			switch {
			case err != nil || path == root:
				return nil
			case rel == filepath.Join("home", ".config"):
				return nil // listed by what is inside
			case rel == filepath.Join("home", ".config", "go"):
				return fs.SkipDir // the go command's own telemetry settings
			case len(out) >= max:
				return fs.SkipAll
			}
			out = append(out, rel)
			if d.IsDir() && strings.Count(rel, "/") >= 3 {
				return fs.SkipDir
			}
			return nil
		})
	}
	return out
}
