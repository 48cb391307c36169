package cli

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"

	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed"
)

// visHome is the root of vis-agent's own files: VIS_HOME, else ~/.vis.
func visHome() string {
	if h := os.Getenv("VIS_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		// No HOME (a bare service environment): the account's home from
		// the user database, else a private folder under the temporary
		// one; never the working folder, which belongs to the user.
		if u, uerr := user.Current(); uerr == nil && u.HomeDir != "" {
			home = u.HomeDir
		} else {
			return filepath.Join(os.TempDir(), fmt.Sprintf("vis-%d", os.Getuid()))
		}
	}
	return filepath.Join(home, ".vis")
}

// stateDir keeps what vis-agent remembers about the machine's CPython.
func stateDir() string { return filepath.Join(visHome(), "python") }

// runtimeRecord is where the machine's CPython is remembered once found.
func runtimeRecord() string { return filepath.Join(stateDir(), pyembed.RecordFile) }

// exeDir is the folder of the running binary, where a release bundle keeps
// its runtime folder.
func exeDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Dir(exe)
}

// userConfig is ~/.vis/config.toml.
func userConfig() string { return filepath.Join(visHome(), "config.toml") }

// projectConfig is the project's vis.toml: beside its pyproject.toml, or,
// outside a project, the nearest one at or above the working folder.
func projectConfig(p *packages.Project, cwd string) string {
	if p != nil {
		return filepath.Join(p.Dir, "vis.toml")
	}
	if dir := packages.FindUp(cwd, "vis.toml"); dir != "" {
		return filepath.Join(dir, "vis.toml")
	}
	return ""
}

// loadSettings reads the user's and the project's configuration.
func loadSettings(p *packages.Project, cwd string) Settings {
	files := []string{userConfig()}
	if f := projectConfig(p, cwd); f != "" {
		files = append(files, f)
	}
	return LoadSettings(files...)
}

// runSettings is loadSettings for a run: the problems, which never stop
// it, are warned about on stderr.
func runSettings(stderr io.Writer, p *packages.Project, cwd string) Settings {
	s := loadSettings(p, cwd)
	for _, problem := range s.Problems {
		fmt.Fprintf(stderr, "vis-agent: warning: %s\n", problem)
	}
	return s
}
