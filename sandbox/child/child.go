// Package child is the Go side of a sandbox session's interpreter child:
// it carries the Python package vis_sandbox (driver, state, defs), writes it
// once to a vis-owned folder, and makes the bootstrap code a CPython
// command line runs to serve the host on an inherited socket.
package child

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

//go:embed py/vis_sandbox/*.py
var pkg embed.FS

// Install writes the package under root in a folder named by its content
// (written once, then reused) and returns the folder to put on sys.path.
func Install(root string) (string, error) {
	names, err := fs.Glob(pkg, "py/vis_sandbox/*.py")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	files := map[string][]byte{}
	for _, n := range names {
		data, err := pkg.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
		files[filepath.Base(n)] = data
	}
	dir := filepath.Join(root, hex.EncodeToString(h.Sum(nil)[:6]))
	marker := filepath.Join(dir, "vis_sandbox", ".complete")
	if _, err := os.Stat(marker); err == nil {
		return dir, nil
	}
	for name, data := range files {
		if err := atomicfile.Write(filepath.Join(dir, "vis_sandbox", name), data); err != nil {
			return "", fmt.Errorf("write the sandbox driver: %w", err)
		}
	}
	if err := atomicfile.Write(marker, nil); err != nil {
		return "", fmt.Errorf("write the sandbox driver: %w", err)
	}
	return dir, nil
}

// compileCode writes the bytecode of every module under the folder in
// sys.argv[1], as the running CPython reads it.
const compileCode = "import compileall, sys\n" +
	"sys.exit(0 if compileall.compile_dir(sys.argv[1], quiet=1, workers=1) else 1)\n"

// Compile writes the bytecode of the package Install wrote in dir for
// CPython version (X.Y), once: python is a command running that CPython
// with the arguments it is given, outside the jail. The jail keeps dir
// read-only, so the child's own import cannot cache what it compiles, and
// without this every new session's interpreter compiled the driver again
// (tens of ms of its first block). A failure is reported once and not
// tried again: the child then compiles in memory, as before.
func Compile(dir, version string, python func(args ...string) *exec.Cmd) error {
	marker := filepath.Join(dir, "vis_sandbox", ".bytecode-"+version)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	// The child's own descriptors (link, stacks, calls) are close-on-exec
	// from its start (sandbox/host/early_linux.c): only the child holds
	// its link to the host.
	cmd := python("-I", "-S", "-c", compileCode, dir)
	// The child may be killed while it waits (a stop --force, the host's
	// end): the compile must not outlive it, writing into $VIS_HOME
	// after a test or an rm removed the folder.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	out, err := cmd.CombinedOutput()
	if werr := atomicfile.Write(marker, nil); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("cache the sandbox driver's bytecode: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Bootstrap is the `python -c` code of the child: import the driver from
// dir (with its bytecode cached there) and serve the host on protocol.LinkFD for
// the session in folder.
func Bootstrap(dir, folder string, info protocol.ChildInfo) (string, error) {
	data, err := json.Marshal(info)
	if err != nil {
		return "", err
	}
	return strings.Join([]string{
		"import os, sys",
		"sys.path.insert(0, os.fsdecode(" + pyembed.BytesLiteral(dir) + "))",
		"dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, False",
		"import vis_sandbox.driver",
		"del sys.path[0]",
		"sys.dont_write_bytecode = dont_write",
		fmt.Sprintf("vis_sandbox.driver.serve(%d, %d, os.fsdecode(%s), %s.decode())", protocol.LinkFD, protocol.StacksFD,
			pyembed.BytesLiteral(folder), pyembed.BytesLiteral(string(data))),
		"",
	}, "\n"), nil
}

// ReceiveInfo reads the session's description, the first line the host
// sends on protocol.LinkFD (see sandbox/protocol). It reads the descriptor itself,
// without a buffer or an *os.File: the driver reads the link after it,
// and the host sends nothing more before the child says it is ready.
func ReceiveInfo() (protocol.ChildInfo, error) {
	var info protocol.ChildInfo
	var line []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(protocol.LinkFD, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return info, fmt.Errorf("read the session's description: %w", err)
		}
		if n == 0 {
			return info, errors.New("read the session's description: the host closed the link")
		}
		line = append(line, buf[:n]...)
		if len(line) > protocol.MaxLine {
			return info, errors.New("read the session's description: too long")
		}
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			if i != len(line)-1 {
				return info, errors.New("read the session's description: the host sent more than one line")
			}
			break
		}
	}
	if err := json.Unmarshal(line, &info); err != nil {
		return info, fmt.Errorf("read the session's description: %w", err)
	}
	return info, nil
}
