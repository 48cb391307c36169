package tools

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// bwrapName is the program that confines commands; tests point it
// elsewhere to see the refusal.
var bwrapName = "bwrap"

// The sizes of a confined command's /tmp and /dev/shm.
const (
	commandTmpBytes = 512 << 20
	commandShmBytes = 64 << 20
)

// confinedPath is the PATH of a confined command.
const confinedPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// bwrapArgs returns bubblewrap's arguments that confine a command to a's
// roots, in cwd, with hidden covered, and helper (the vis-agent binary,
// when not "") at confineHelper, read-only. Inside, the system is
// read-only, /tmp is private and empty, /proc shows only the command's
// processes, /dev holds only the basic devices, every capability is
// dropped (also for root, with no_new_privs set), and without a.Network
// only a loopback of its own is there. Everything else of the host
// (/root, /home, /var, the rest of /etc) is not there at all.
func bwrapArgs(a Access, cwd string, hidden []string, helper string) []string {
	// The tmpfs mounts are sized: their pages are the machine's memory,
	// outside every process's memory cap (unsized, each took half of it).
	// /dev itself is read-only; /dev/shm is a tmpfs of its own.
	args := []string{
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(commandShmBytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--size", strconv.Itoa(commandTmpBytes), "--tmpfs", "/tmp",
	}
	if !a.Network || a.Proxy != nil {
		args = append(args, "--unshare-net")
	}
	for _, d := range jail.SystemDirs {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case st.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, p := range append(append([]string(nil), jail.SystemEtc...), jail.NetworkEtc...) {
		args = append(args, "--ro-bind-try", p, p)
	}
	// The CPUs' topology, which nproc, psutil and loky read.
	args = append(args, "--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu")
	// Roots, outer ones first, so a read-only root inside a writable one
	// (or the reverse) keeps its own mode; then what the shield keeps
	// read-only inside them, and the sessions folder it covers, at their
	// depths among them (the session's own state and temp folders, roots
	// themselves, go over the cover).
	type mount struct {
		path string
		how  string // --bind-try, --ro-bind-try or --tmpfs
	}
	var mounts []mount
	for _, r := range a.ReadOnly {
		mounts = append(mounts, mount{rootPath(r), "--ro-bind-try"})
	}
	roots := map[string]bool{}
	for _, r := range a.ReadWrite {
		roots[rootPath(r)] = true
		mounts = append(mounts, mount{rootPath(r), "--bind-try"})
	}
	// What the shield makes writable again inside a read-only part (the
	// folders of a home folder's top level), before what it keeps
	// read-only at the same depth.
	for _, w := range a.Shield.Writable {
		if !roots[w] {
			mounts = append(mounts, mount{w, "--bind-try"})
		}
	}
	for _, p := range a.Shield.ReadOnly {
		mounts = append(mounts, mount{p, "--ro-bind-try"})
	}
	if a.Shield.Sessions != "" {
		mounts = append(mounts, mount{a.Shield.Sessions, "--tmpfs"})
	}
	for _, p := range a.Shield.Shown {
		mounts = append(mounts, mount{p, "--ro-bind-try"})
	}
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].path) < depth(mounts[j].path) })
	for _, m := range mounts {
		if m.how == "--tmpfs" {
			args = append(args, m.how, m.path)
		} else {
			args = append(args, m.how, m.path, m.path)
		}
	}
	for _, h := range hidden {
		h = rootPath(h)
		st, err := os.Stat(h)
		switch {
		case err != nil:
		case st.IsDir():
			args = append(args, "--tmpfs", h, "--remount-ro", h)
		default:
			args = append(args, "--ro-bind", "/dev/null", h)
		}
	}
	if a.Shield.Sessions != "" {
		args = append(args, "--remount-ro", a.Shield.Sessions)
	}
	if helper != "" {
		args = append(args, "--ro-bind", helper, confineHelper)
	}
	// The root above these mounts is bubblewrap's own tmpfs: read-only
	// too, so that nothing is written outside the roots and /tmp even
	// where it would vanish with the command.
	return append(args, "--remount-ro", "/", "--chdir", cwd, "--")
}

// rootPath is a root made canonical, as given when that fails.
func rootPath(p string) string {
	if real, err := realpath.Resolve(filepath.Clean(p)); err == nil {
		return real
	}
	return filepath.Clean(p)
}

func depth(p string) int { return strings.Count(p, "/") }

// confinedEnv is the whole environment of a confined command: nothing of
// the host's but the language, and the session's python first on PATH.
func confinedEnv(cwd string, py CommandPython) []string {
	path := strings.Join(append(append([]string(nil), py.Bin...), confinedPath), ":")
	env := []string{"PATH=" + path, "HOME=/tmp", "TMPDIR=/tmp", "TERM=dumb", "PWD=" + cwd}
	if py.PythonPath != "" {
		env = append(env, "PYTHONPATH="+py.PythonPath)
	}
	for _, k := range []string{"LANG", "LC_ALL", "LC_CTYPE", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// bwrapCheck caches, per program, whether bubblewrap can confine a
// command here: it is found and it can create its namespaces, which
// a container or a kernel setting may forbid.
var bwrapCheck = struct {
	sync.Mutex
	done map[string]error
}{done: map[string]error{}}

// CanConfine returns nil when shell commands can run confined here, or
// the sentence saying why not and how to make them; `sandbox list` shows
// it under a running jailed session.
func CanConfine() error {
	_, err := bwrapPath()
	return err
}

// lookBwrap finds bubblewrap in confinedPath, which is also a session
// host's PATH, rather than the caller's: the host and `sandbox list`,
// asking on its behalf, find the same one.
func lookBwrap() (string, error) {
	if strings.Contains(bwrapName, "/") {
		return exec.LookPath(bwrapName)
	}
	for _, dir := range filepath.SplitList(confinedPath) {
		if path, err := exec.LookPath(filepath.Join(dir, bwrapName)); err == nil {
			return path, nil
		}
	}
	return "", exec.ErrNotFound
}

// bwrapPath returns the bubblewrap to run, after trying it once, or an
// error saying how to make confined commands work.
func bwrapPath() (string, error) {
	bwrapCheck.Lock()
	defer bwrapCheck.Unlock()
	path, err := lookBwrap()
	if err != nil {
		return "", failure(errRefused, "shell: commands of a jailed session run confined by bubblewrap, which is not installed: install it (apt-get install bubblewrap) or run the session with --no-jail")
	}
	if err, ok := bwrapCheck.done[path]; ok {
		return path, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	probe := exec.CommandContext(ctx, path, append(bwrapArgs(Access{}, "/", nil, ""), "/bin/true")...)
	var stderr bytes.Buffer
	probe.Stderr = &stderr
	if err = probe.Run(); err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		err = failure(errRefused, "shell: bubblewrap cannot confine commands here (%s): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or the container's seccomp/AppArmor profile) or run the session with --no-jail", why)
	}
	bwrapCheck.done[path] = err
	return path, err
}
