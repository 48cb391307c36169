package jail

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestNewShield: what a session's writable roots make read-only, hidden
// or refused, for a home inside the workspace, a .git folder, file or
// link, the shared packages elsewhere, and roots inside the home.
func TestNewShield(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home, pkgs, other := filepath.Join(base, "ws"), filepath.Join(base, "ws", ".vis"), filepath.Join(base, "ws", "pkgs"), filepath.Join(base, "other")
	sessions := filepath.Join(home, "sandbox", "sessions")
	state, tmp := filepath.Join(sessions, "s-1", "state"), filepath.Join(sessions, "s-1", "tmp")
	for _, d := range []string{filepath.Join(ws, ".git"), pkgs, other, state, tmp, filepath.Join(home, "python")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(other, ".git"), []byte("gitdir: /x\n"), 0o644)
	linked := filepath.Join(base, "linked")
	os.MkdirAll(linked, 0o755)
	os.Symlink(other, filepath.Join(linked, ".git"))
	own := []string{home, pkgs}
	inner := []string{filepath.Join(home, "config.toml"), filepath.Join(home, "python"), filepath.Join(home, "sandbox"), pkgs}
	keep := []string{state, tmp}

	s, err := NewShield([]string{ws, state, tmp, other, linked}, own, inner, sessions, keep)
	if err != nil {
		t.Fatal(err)
	}
	want := Shield{Writable: []string{ws, state, tmp, other, linked},
		ReadOnly: []string{home, pkgs, filepath.Join(ws, ".git"), filepath.Join(other, ".git")}, Sessions: filepath.Dir(sessions)}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("shield:\n got %+v\nwant %+v", s, want)
	}

	if !reflect.DeepEqual(s.Keep(), keep) {
		t.Errorf("keep: %v", s.Keep())
	}
	// Nothing inside the writable roots to keep; the sessions folder is
	// still covered, which matters where a read-only root holds it.
	elsewhere := filepath.Join(home, "elsewhere")
	s, err = NewShield([]string{elsewhere, state}, own, inner, sessions, keep)
	if err != nil || s.Sessions != filepath.Dir(sessions) || !reflect.DeepEqual(s.Keep(), keep) {
		t.Errorf("a folder of the home's own: %+v %v", s, err)
	}
	if s.Protects([]string{elsewhere, state}) {
		t.Errorf("no root holds the sessions folder, yet the shield protects something")
	}
	if !s.Protects([]string{elsewhere, state, base}) {
		t.Errorf("a read-only root holds the sessions folder, yet the shield protects nothing")
	}
	// A root inside what vis-agent keeps: refused, naming both.
	_, err = NewShield([]string{filepath.Join(home, "python")}, own, inner, sessions, keep)
	if err == nil || !strings.Contains(err.Error(), "is inside "+filepath.Join(home, "python")) {
		t.Errorf("a root inside the home's python folder: %v", err)
	}
}

// TestShieldOfAHomeFolder: a writable root that holds the user's home
// folder ($HOME) keeps the home's top level read-only, dotfiles and new
// names alike, and its folders but the dot-folders and links writable; a
// root inside the home changes nothing.
func TestShieldOfAHomeFolder(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home", "me")
	testenv.WriteTree(t, home, map[string]string{".bashrc": "", ".ssh/authorized_keys": "", "proj/a.py": "", "proj/.git/config": "", "notes.txt": "", "docs/x": ""})
	os.Symlink(base, filepath.Join(home, "link"))
	t.Setenv("HOME", home)
	proj, docs := filepath.Join(home, "proj"), filepath.Join(home, "docs")
	for _, root := range []string{home, base} {
		s, err := NewShield([]string{root}, nil, nil, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := Shield{Writable: []string{root, docs, proj}, ReadOnly: []string{home, filepath.Join(proj, ".git")}}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("root %s:\n got %+v\nwant %+v", root, s, want)
		}
		for path, readOnly := range map[string]bool{
			filepath.Join(home, ".bashrc"): true, filepath.Join(home, ".bash_profile"): true,
			filepath.Join(home, ".ssh", "authorized_keys"): true, filepath.Join(home, "notes.txt"): true,
			filepath.Join(home, "new.txt"): true, filepath.Join(home, "link", "x"): true, home: true,
			filepath.Join(proj, "a.py"): false, filepath.Join(proj, ".git", "hooks", "pre-commit"): true, filepath.Join(docs, "deep", "y"): false, proj: false,
		} {
			if got := s.ReadOnlyAt(path); got != readOnly {
				t.Errorf("root %s: ReadOnlyAt(%s) = %v, want %v", root, path, got, readOnly)
			}
		}
	}
	s, err := NewShield([]string{proj}, nil, nil, "", nil)
	if err != nil || !reflect.DeepEqual(s, Shield{Writable: []string{proj}, ReadOnly: []string{filepath.Join(proj, ".git")}}) {
		t.Errorf("a root inside the home: %+v %v", s, err)
	}
}

// TestShieldMounts applies a session's policy with a shield in a process
// started as a jailed child (its C constructor makes the mount
// namespace) in the workspace, with the kernel layer alone: the workspace
// (through the working folder too) and its state folder are writable, the
// workspace's .git is not, a file outside the roots does not exist (its
// mode and times do not change, stat and inotify find nothing), and the
// sessions folder shows only the session's own.
func TestShieldMounts(t *testing.T) {
	w := newWorld(t)
	py := testenv.First(t)
	home := filepath.Join(w.ws, ".vis")
	sessions := filepath.Join(home, "sandbox", "sessions")
	state := filepath.Join(sessions, "s-1", "state")
	for _, d := range []string{filepath.Join(w.ws, ".git"), state, filepath.Join(sessions, "other-2", "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(sessions, "other-2", "state", "snap"), []byte(w.secretText), 0o644)
	p := sessionPolicy(w, py)
	var err error
	if p.Shield, err = NewShield([]string{w.ws, state}, []string{home}, nil, sessions, []string{state}); err != nil {
		t.Fatal(err)
	}
	p.ReadWrite = append(p.ReadWrite, state)
	code := prelude + `import glob
def attempt(name, f):
    try:
        f()
        print(name, E)
    except OSError as e:
        print(name, "refused", e.errno)
attempt("write the workspace", lambda: open("f", "w").write("x"))  # relative: the working folder
attempt("write the state", lambda: open(os.environ["STATE"] + "/f", "w").write("x"))
attempt("write .git", lambda: open(WS + "/.git/config", "w").write("x"))
attempt("write the home", lambda: open(WS + "/.vis/config.toml", "w").write("x"))
attempt("chmod outside", lambda: os.chmod(S, 0o777))
attempt("utime outside", lambda: os.utime(S, (0, 0)))
attempt("chmod inside", lambda: os.chmod(WS + "/f", 0o600))
attempt("stat outside", lambda: os.stat(S))
attempt("stat its folder", lambda: os.stat(os.path.dirname(S)))
print("sessions", sorted(os.listdir(WS + "/.vis/sandbox/sessions")), glob.glob(WS + "/.vis/sandbox/sessions/*/state/*"))
`
	req, _ := json.Marshal(childRequest{Policy: p, Argv: []string{py.Executable, "-c", code}})
	exe, _ := os.Executable()
	cmd := exec.Command(exe, protocol.ChildArgs("/nowhere", true, false)...)
	cmd.Env = append(w.env(), childEnv+"="+string(req), "STATE="+state)
	cmd.Dir = w.ws
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, _ := os.Stat(w.secret)
	for _, want := range []string{"write the workspace ESCAPED", "write the state ESCAPED", "chmod inside ESCAPED",
		"write .git refused 30", "write the home refused 30", "chmod outside refused 2", "utime outside refused 2",
		"stat outside refused 2", "stat its folder refused 2", "only the roots in sight", "own namespaces: mount ipc uts cgroup",
		"sessions ['s-1'] ['" + state + "/f']", "read-only mounts"} {
		if !strings.Contains(string(out), strings.ReplaceAll(want, "ESCAPED", "ESC"+"APED")) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if st.Mode().Perm() != 0o644 || strings.Contains(string(out), w.secretText) {
		t.Errorf("outside the roots: mode %v\n%s", st.Mode(), out)
	}
}

// TestShieldNow: a .git or .gitmodules made at the top of a writable
// root after the shield was computed is kept by the shield of a process
// started now, one removed is dropped, a symbolic link is left; the
// host's tools refuse a write to a git name at the top of a root before
// it exists.
func TestShieldNow(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, extra, home := filepath.Join(base, "ws"), filepath.Join(base, "extra"), filepath.Join(base, "ws", ".vis")
	testenv.WriteTree(t, ws, map[string]string{"a.py": "", ".vis/config.toml": "", "sub/x": ""})
	testenv.WriteTree(t, extra, map[string]string{".git": "gitdir: /x\n"})
	s, err := NewShield([]string{ws, extra}, []string{home}, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{home, filepath.Join(extra, ".git")}; !reflect.DeepEqual(s.ReadOnly, want) {
		t.Errorf("at the start: %v, want %v", s.ReadOnly, want)
	}
	for path, readOnly := range map[string]bool{
		filepath.Join(ws, ".git"): true, filepath.Join(ws, ".git", "hooks", "pre-commit"): true, filepath.Join(ws, ".gitmodules"): true,
		filepath.Join(ws, "sub", ".git", "config"): false, filepath.Join(ws, ".github", "x"): false, filepath.Join(ws, "a.py"): false,
	} {
		if got := s.ReadOnlyAt(path); got != readOnly {
			t.Errorf("ReadOnlyAt(%s) = %v, want %v", path, got, readOnly)
		}
	}
	testenv.WriteTree(t, ws, map[string]string{".git/config": "", ".gitmodules": ""})
	os.Remove(filepath.Join(extra, ".git"))
	os.Symlink(ws, filepath.Join(extra, ".gitmodules"))
	now := s.Now()
	if want := []string{home, filepath.Join(ws, ".git"), filepath.Join(ws, ".gitmodules")}; !reflect.DeepEqual(now.ReadOnly, want) {
		t.Errorf("now: %v, want %v", now.ReadOnly, want)
	}
	if !reflect.DeepEqual(now.Writable, s.Writable) || len(s.ReadOnly) != 2 {
		t.Errorf("Now changed what it was given or the writable roots: %+v %+v", s, now)
	}
}

// TestShieldGitLeads: what git at the top of a writable root reads
// outside its .git is kept read-only where a writable root holds it: the
// folder a .git file names, a commondir's folder, what config, hooks and
// info link to; not one outside the writable roots, nor a writable root
// itself ("gitdir: ."), nor what a FIFO in place of a .git file names. A
// ".." after a link goes up from where the link leads, as git resolves
// it ("gitdir: lnk/../g" is deep/g where lnk -> deep/inner), not
// lexically (g).
func TestShieldGitLeads(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sep, common, linked, self, fifo, through := filepath.Join(base, "sep"), filepath.Join(base, "common"), filepath.Join(base, "linked"),
		filepath.Join(base, "self"), filepath.Join(base, "fifo"), filepath.Join(base, "through")
	testenv.WriteTree(t, base, map[string]string{
		"sep/.git": "gitdir: .repo\n", "sep/.repo/config": "", "sep/.repo/commondir": "../shared\n", "sep/shared/config": "",
		"common/.git/commondir": "../../outside/c\n",
		"linked/.git/config":    "", "linked/evil-hooks/pre-commit": "", "linked/evil-config": "",
		"self/.git": "gitdir: .\n", "outside/c/config": "",
		"through/.git": "gitdir: lnk/../g\n", "through/deep/inner/x": "", "through/deep/g/config": "", "through/g/config": "",
	})
	if err := os.Symlink("deep/inner", filepath.Join(through, "lnk")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("../evil-hooks", filepath.Join(linked, ".git", "hooks"))
	os.Remove(filepath.Join(linked, ".git", "config"))
	os.Symlink("../evil-config", filepath.Join(linked, ".git", "config"))
	os.MkdirAll(fifo, 0o755)
	if err := unix.Mkfifo(filepath.Join(fifo, ".git"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Shield{Writable: []string{sep, common, linked, self, fifo, through}}.Now()
	want := []string{filepath.Join(sep, ".git"), filepath.Join(sep, ".repo"), filepath.Join(sep, "shared"),
		filepath.Join(common, ".git"), filepath.Join(linked, ".git"), filepath.Join(linked, "evil-config"), filepath.Join(linked, "evil-hooks"),
		filepath.Join(self, ".git"), filepath.Join(fifo, ".git"), filepath.Join(through, ".git"), filepath.Join(through, "deep", "g")}
	sort.Strings(want)
	got := append([]string(nil), s.ReadOnly...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read-only:\n got %v\nwant %v", got, want)
	}
	way := GitWayOf(through)
	if wantNames := []string{base, through, filepath.Join(through, "lnk"), filepath.Join(through, "deep"), filepath.Join(through, "deep", "inner"), filepath.Join(through, "deep", "g")}; way.Dir != filepath.Join(through, "deep", "g") || !reflect.DeepEqual(way.Names[len(way.Names)-len(wantNames):], wantNames) {
		t.Errorf("the way of %s: %+v, want its git folder deep/g and its names ending %v", through, way, wantNames)
	}
	if way := GitWayOf(sep); way.Common != filepath.Join(sep, "shared") || !slices.Contains(way.Names, filepath.Join(sep, "shared")) {
		t.Errorf("the way of %s: %+v, want its common folder shared among its names", sep, way)
	}
}
