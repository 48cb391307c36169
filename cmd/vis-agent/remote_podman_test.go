package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestRemotePodman drives a session through --host podman://… with the
// real podman (make test-remote installs it and runc): a container of the
// test whose root is a folder of the test holding symlinks to the
// machine's /usr (mounted read-only, as are the CPython and the built
// binary, at their own paths), with no network and no image (no registry
// is reached). Its storage, run state and configuration are the test's
// own, through CONTAINERS_CONF and CONTAINERS_STORAGE_CONF; the container
// is removed with everything running in it. Skipped outside make
// test-remote, and when podman cannot start a container on this machine
// (its reason).
func TestRemotePodman(t *testing.T) {
	t.Parallel()
	remoteEngine(t, "podman", "runc")
	py := testenv.First(t)
	lb := newSandbox(t, py)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{"usr", "etc", "tmp", "proc", "sys", "dev", "root"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// runc, not crun: crun refuses a machine with cgroups v1 and v2 both
	// mounted. Limits no higher than the test's: raising one needs
	// CAP_SYS_RESOURCE, which a test run in a container may not have.
	// File locks in tmp_dir and no event log, where podman would use
	// /dev/shm and the journal or /run: nothing outside the test's folder.
	lb.env = append(lb.env,
		"CONTAINERS_STORAGE_CONF="+write("storage.conf", fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n",
			filepath.Join(dir, "graph"), filepath.Join(dir, "run"))),
		"CONTAINERS_CONF="+write("containers.conf", fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nlock_type = \"file\"\nevents_logger = \"none\"\ntmp_dir = %q\n",
			filepath.Join(dir, "tmp"))))
	podman := func(args ...string) (string, error) {
		cmd := exec.Command("podman", args...)
		cmd.Env = lb.env
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	name := fmt.Sprintf("vistest-%d", os.Getpid())
	remoteHome, ws := t.TempDir(), t.TempDir()
	args := []string{"run", "-d", "--name", name, "--network=none", "--security-opt", "seccomp=unconfined",
		"-v", "/usr:/usr:ro", "-v", filepath.Dir(lb.bin) + ":" + filepath.Dir(lb.bin) + ":ro",
		"-v", remoteHome + ":/vis", "-v", ws + ":/ws",
		"-e", "VIS_HOME=/vis", "-e", "VIS_PYTHON_NATIVE_PATH=" + py.Library, "-e", "HOME=/root", "-e", "PATH=" + filepath.Dir(lb.bin) + ":/usr/bin"}
	if !strings.HasPrefix(py.Prefix, "/usr/") {
		args = append(args, "-v", py.Prefix+":"+py.Prefix+":ro")
	}
	if out, err := podman(append(args, "--rootfs", root, "sleep", "infinity")...); err != nil {
		podman("rm", "-f", "-t", "0", name)
		t.Skipf("podman cannot start a container here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := podman("rm", "-f", "-t", "0", name); err != nil {
			t.Errorf("podman rm: %v: %s", err, out)
		}
		// conmon's `podman container cleanup` may still be at work in
		// the storage (its command line names it) as rm returns.
		graph := filepath.Join(dir, "graph")
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if !anyProcessNames(graph) {
				return
			}
		}
		t.Errorf("podman's processes for %s did not end", graph)
	})
	noMuxLeft(t, lb)
	host := "podman://" + name
	remote := func(args ...string) []string {
		return append(args, "--host", host, "--session", "c", "--workspace", "/ws")
	}

	lb.ok(remote("run", "-c", "x = 41")...)
	if r := lb.ok(remote("run", "-c", "print(x + 1, session.access.is_jailed)")...); r.stdout != "42 True\n" {
		t.Errorf("the second block in the container: %q", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(lb.home, "sandbox", "sessions")); err == nil {
		t.Error("the local VIS_HOME has sessions")
	}
	// Both went through one multiplexer: one podman exec.
	execs := childrenNamed(theMux(t, lb), "podman")
	if len(execs) != 1 {
		t.Errorf("the multiplexer's podman processes: %v", execs)
	}

	// Streaming, and Ctrl-C reaching the block through podman exec.
	checkCtrlC(t, lb, remote)
}

// anyProcessNames says whether a process's command line holds s.
func anyProcessNames(s string) bool {
	all, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range all {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}
