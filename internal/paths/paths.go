// Package paths owns the layout of vis-agent's own folder ($VIS_HOME,
// default ~/.vis): every file vis-agent keeps is named here, so the
// python runner, the sandbox sessions, the jail and the attachments store
// agree on where things are.
//
//	$VIS_HOME/
//	  config.toml                 the user's settings (internal/config)
//	  python/                     what vis-agent keeps about CPython
//	    runtime.json              the machine's CPython, once found
//	    packages/                 the shared packages (VIS_PYTHON_PACKAGES)
//	      3.11/ 3.12/ …           one virtual environment per CPython version
//	    startup/ uv               start-up module, uv
//	    uv-verified               the uv binary whose pin was checked
//	  sandbox/
//	    sessions/<id>/            one folder per session (0700)
//	    history/                  the REPL's input history, per workspace
//	    attachments/              the attachments store
//	    logs/YYYY-MM-DD/          the hosts' hang records
package paths

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// Layout is the folder layout for one environment: the variables it was
// made from decide every path.
type Layout struct {
	getenv func(string) string
}

// New is the layout seen through getenv (os.Getenv, or a test's map).
func New(getenv func(string) string) Layout { return Layout{getenv: getenv} }

// Home is vis-agent's own folder: VIS_HOME, else ~/.vis.
func (l Layout) Home() string {
	if h := l.getenv("VIS_HOME"); h != "" {
		return absolute(h)
	}
	home := l.getenv("HOME")
	if home == "" {
		// No HOME (a bare service environment): the account's home from
		// the user database, else a private folder under the temporary
		// one; never the working folder, which belongs to the user.
		if u, err := user.Current(); err == nil && u.HomeDir != "" {
			home = u.HomeDir
		} else {
			return filepath.Join(os.TempDir(), fmt.Sprintf("vis-%d", os.Getuid()))
		}
	}
	return filepath.Join(home, ".vis")
}

// UserConfig is the user's settings file.
func (l Layout) UserConfig() string { return filepath.Join(l.Home(), "config.toml") }

// Python keeps what vis-agent remembers about the machine's CPython: the
// runtime record, environments, pip, the start-up module and uv.
func (l Layout) Python() string { return filepath.Join(l.Home(), "python") }

// RuntimeRecord remembers the machine's CPython once found.
func (l Layout) RuntimeRecord() string { return filepath.Join(l.Python(), "runtime.json") }

// SharedPackages is the shared packages folder: VIS_PYTHON_PACKAGES, else
// python/packages.
func (l Layout) SharedPackages() string {
	if d := l.getenv("VIS_PYTHON_PACKAGES"); d != "" {
		return absolute(d)
	}
	return filepath.Join(l.Python(), "packages")
}

// SharedEnvironment is the shared environment of CPython version short
// ("3.11"): a virtual environment whose site-packages are the shared
// packages of that version.
func (l Layout) SharedEnvironment(short string) string {
	return filepath.Join(l.SharedPackages(), short)
}

// Startup holds the start-up module of `vis-agent python` runs.
func (l Layout) Startup() string { return filepath.Join(l.Python(), "startup") }

// UVVerified remembers the uv binary (path, size, modification time)
// whose version was checked against the pin.
func (l Layout) UVVerified() string { return filepath.Join(l.Python(), "uv-verified") }

// Sandbox holds the sandbox's sessions, history and attachments.
func (l Layout) Sandbox() string { return filepath.Join(l.Home(), "sandbox") }

// Own are vis-agent's own folders, which a jailed session may never
// change, whatever writable root holds them: $VIS_HOME, and the shared
// packages when VIS_PYTHON_PACKAGES puts them elsewhere. Inner are those
// a writable root may not be inside of: everything vis-agent keeps in
// $VIS_HOME (another folder there, a workspace of its own, may be).
func (l Layout) Own() (own, inner []string) {
	own = []string{l.Home()}
	if p := l.SharedPackages(); !strings.HasPrefix(p, l.Home()+string(filepath.Separator)) {
		own = append(own, p)
	}
	return own, []string{l.UserConfig(), l.Python(), l.Sandbox(), l.SharedPackages()}
}

// Sessions holds one folder per sandbox session.
func (l Layout) Sessions() string { return filepath.Join(l.Sandbox(), "sessions") }

// RemoteMux holds the sockets, locks and logs of the multiplexers that
// carry requests to --host machines (one per URL).
func (l Layout) RemoteMux() string { return filepath.Join(l.Sandbox(), "remote") }

// History holds the REPL's input history, one file per workspace.
func (l Layout) History() string { return filepath.Join(l.Sandbox(), "history") }

// Attachments is the attachments store: its database and blobs.
func (l Layout) Attachments() string { return filepath.Join(l.Sandbox(), "attachments") }

// AttachmentsOf is the attachments store of the Vis home that holds the
// session folder dir (a Session(id)): sessions and the store are siblings,
// so a client that knows only a session's folder finds its store.
func AttachmentsOf(sessionDir string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(sessionDir)), "attachments")
}

// Logs holds the session hosts' hang records (a retired child's Python
// stacks), one folder per day: in the sandbox folder, which a session's
// jail covers, so that no session reads another's.
func (l Layout) Logs() string { return filepath.Join(l.Sandbox(), "logs") }

// ExeDir is the folder of the running binary, where a release bundle keeps
// its runtime folder (vis-agent-python/).
func ExeDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Dir(exe)
}

// absolute makes a folder named by a variable absolute, so a later change
// of working folder does not move it.
func absolute(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
