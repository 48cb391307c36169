package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// OwnHome points HOME at an empty temp folder for the rest of the test
// process and returns its removal (with the binaries the process built:
// RemoveBuilt). The commands end-to-end tests start
// (uv, an interactive python, a session host) write caches and histories
// under HOME; they must land in the tests' own folders, never the caller's.
// The folders the caller's tools resolve through HOME (Go's caches, pyenv,
// where testenv finds CPythons) are pinned first, so builds stay cached.
func OwnHome() (func(), error) {
	var keep []string
	if out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output(); err == nil {
		vals := strings.Split(strings.TrimSpace(string(out)), "\n")
		for i, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
			if i < len(vals) && vals[i] != "" {
				keep = append(keep, name, vals[i])
			}
		}
	}
	if home, err := os.UserHomeDir(); err == nil && os.Getenv("PYENV_ROOT") == "" {
		if _, err := os.Stat(filepath.Join(home, ".pyenv")); err == nil {
			keep = append(keep, "PYENV_ROOT", filepath.Join(home, ".pyenv"))
		}
	}
	dir, err := os.MkdirTemp("", "vis-agent-test-home-")
	if err != nil {
		return nil, fmt.Errorf("a temp HOME for the tests: %w", err)
	}
	for _, v := range []string{"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "UV_CACHE_DIR", "PYTHON_HISTORY"} {
		os.Unsetenv(v)
	}
	keep = append(keep, "HOME", dir)
	for i := 0; i < len(keep); i += 2 {
		if err := os.Setenv(keep[i], keep[i+1]); err != nil {
			return nil, fmt.Errorf("a temp HOME for the tests: %w", err)
		}
	}
	return func() {
		os.RemoveAll(dir)
		RemoveBuilt()
	}, nil
}
