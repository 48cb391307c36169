// Package session is the on-disk layout of sandbox sessions: how a session
// is named and found, the files of its folder, and the unix socket its
// host listens on. The host and every client use it, so they agree.
package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// DefaultName is the session a command uses without --session.
const DefaultName = "default"

// CheckName refuses a session name outside [A-Za-z0-9._-]{1,64} (by hand:
// a package-level regular expression would be compiled on every vis-agent
// start, python runs included).
func CheckName(name string) error {
	ok := len(name) >= 1 && len(name) <= 64 && name != "." && name != ".."
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("invalid session name %q: use 1 to 64 of A-Z a-z 0-9 . _ -", name)
	}
	return nil
}

// Files of a session folder.
const (
	metaFile    = "session.json" // Meta: name and workspace
	hostFile    = "host.json"    // HostRecord, rewritten by the host
	stoppedFile = "stopped.json" // why the last host stopped its child
	aliveLock   = "host.alive"   // flock held by the running host
	startLock   = "start.lock"   // flock held by a client starting the host
	sockFile    = "sock"
	// LogFile collects the host's and its children's stray output.
	LogFile = "host.log"
)

// maxRecord bounds what a reader takes from a session's JSON files: they
// are small, and one replaced by something else must not cost more.
const maxRecord = 1 << 20

// Folder is one session's folder.
type Folder struct{ Dir string }

// ID is the session's key: its folder's name, made of its name and a hash
// of its workspace (Find), so two workspaces may each have a session of the
// same name. The attachments store files attachments under it.
func (f Folder) ID() string { return filepath.Base(f.Dir) }

// Meta is what names a session.
type Meta struct {
	Name      string `json:"name"`
	Workspace string `json:"workspace"`
	// ForkOf: the session this one was forked from (sandbox fork).
	ForkOf *ForkOf `json:"fork_of,omitempty"`
}

// ForkOf is where a fork came from: a session of the same workspace, or
// of Workspace when it is another, and the block whose state it started
// with (0: the source's last).
type ForkOf struct {
	Session   string `json:"session"`
	Workspace string `json:"workspace,omitempty"`
	Block     int    `json:"block,omitempty"`
}

// String is where the fork came from, as `sandbox list` shows it.
func (f ForkOf) String() string {
	s := f.Session
	if f.Block > 0 {
		s = fmt.Sprintf("%s at block %d", f.Session, f.Block)
	}
	if f.Workspace != "" {
		s += " of " + f.Workspace
	}
	return s
}

// id is the folder name of session name in workspace: two workspaces may
// each have a session of the same name.
func id(name, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	return name + "-" + hex.EncodeToString(sum[:5])
}

// Create finds (making it, 0700, when new) the folder of session name in
// workspace under root.
func Create(root string, m Meta) (Folder, error) {
	f := Folder{filepath.Join(root, id(m.Name, m.Workspace))}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			// Sessions live in vis-agent's own folder ($VIS_HOME/sandbox).
			return f, fmt.Errorf("make the session folder: %w; set VIS_HOME to a folder you can write", err)
		}
		return f, fmt.Errorf("make the session folder: %w", err)
	}
	if _, err := os.Stat(f.path(metaFile)); err != nil {
		data, _ := json.Marshal(m)
		if err := writePrivate(f.path(metaFile), data); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Find is the folder of session name in workspace, which may not exist.
func Find(root string, m Meta) Folder {
	return Folder{filepath.Join(root, id(m.Name, m.Workspace))}
}

// All lists the session folders under root.
func All(root string) ([]Folder, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the sessions: %w", err)
	}
	var out []Folder
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(root, e.Name(), metaFile)); err == nil {
				out = append(out, Folder{filepath.Join(root, e.Name())})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

func (f Folder) path(name string) string { return filepath.Join(f.Dir, name) }

// StateDir is the folder where the child keeps the session's snapshot, of
// its own so that the jailed code, which may write there, cannot reach
// the host's files beside it (socket, record, locks).
func (f Folder) StateDir() string { return f.path("state") }

// JournalFile is the session's journal (sandbox/journal), which only its
// host writes: beside the key, out of the jail's reach.
func (f Folder) JournalFile() string { return f.path("journal.db") }

// TempDir holds the private temp folder of each of the session's
// interpreters (p<pid>), each removed by the next to start once its
// interpreter has ended.
func (f Folder) TempDir() string { return f.path("tmp") }

// PackagesDir is the session's own package folder for CPython version
// (X.Y): what install() put there, on sys.path after the environment the
// session uses. Only the host's uv writes it; the jailed code reads it.
func (f Folder) PackagesDir(version string) string { return filepath.Join(f.Dir, "packages", version) }

// PackageLayer is PackagesDir, made when missing: before the jail, which
// lets the session read it and only the host's uv write it.
func (f Folder) PackageLayer(version string) (string, error) {
	dir := f.PackagesDir(version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make the session's package folder: %w", err)
	}
	return dir, nil
}

// Meta reads the session's name and workspace.
func (f Folder) Meta() (Meta, error) {
	var m Meta
	data, err := fsutil.ReadRegular(f.path(metaFile), maxRecord)
	if err != nil {
		return m, fmt.Errorf("read the session: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("read %s: %w", f.path(metaFile), err)
	}
	return m, nil
}

// HostRecord is what a running host says about itself, for `list` and for
// other hosts choosing a child to stop under memory pressure.
type HostRecord struct {
	HostPID  int   `json:"host_pid"`
	ChildPID int   `json:"child_pid"`
	LastUse  int64 `json:"last_use_ms"` // Unix milliseconds of the last block's end
	Saved    int   `json:"saved_names"` // names in the snapshot, -1 when unknown
	// Policy is the jail its child runs under (or will start under).
	Policy *protocol.Policy `json:"policy,omitempty"`
	// KernelMissing is what the running child's kernel layer could not
	// enforce, one sentence per layer, "; " between them.
	KernelMissing string `json:"kernel_missing,omitempty"`
}

// WriteHost replaces the host record.
func (f Folder) WriteHost(r HostRecord) error {
	data, _ := json.Marshal(r)
	return writePrivate(f.path(hostFile), data)
}

// Host reads the host record (zero when there is none).
func (f Folder) Host() HostRecord {
	r := HostRecord{Saved: -1}
	if data, err := fsutil.ReadRegular(f.path(hostFile), maxRecord); err == nil {
		json.Unmarshal(data, &r)
	}
	return r
}

// WriteStopped records why the child stopped, for the restart notice of a
// later host; TakeStopped reads and removes it.
func (f Folder) WriteStopped(reason string) error {
	data, _ := json.Marshal(map[string]string{"reason": reason})
	return writePrivate(f.path(stoppedFile), data)
}

// TakeStopped returns the recorded reason, or "" when the last host left
// none (it was killed), and removes the record.
func (f Folder) TakeStopped() string {
	var v map[string]string
	data, err := fsutil.ReadRegular(f.path(stoppedFile), maxRecord)
	if err != nil {
		return ""
	}
	os.Remove(f.path(stoppedFile))
	json.Unmarshal(data, &v)
	return v["reason"]
}

// Lock is a held flock.
type Lock struct{ file *os.File }

func (f Folder) lock(name string, how int) (*Lock, error) {
	file, err := os.OpenFile(f.path(name), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the session lock: %w", err)
	}
	for {
		err = syscall.Flock(int(file.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return &Lock{file}, nil
}

// Release lets the lock go.
func (l *Lock) Release() { l.file.Close() }

// LockStart serializes the clients that find no host and start one.
func (f Folder) LockStart() (*Lock, error) { return f.lock(startLock, syscall.LOCK_EX) }

// LockAlive is taken by a host for its whole life. A host that is still
// exiting (it stopped, its socket is gone) is waited for, up to wait; after
// that it fails, as another host serves the session.
func (f Folder) LockAlive(wait time.Duration) (*Lock, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := f.lock(aliveLock, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return l, err
		}
		if time.Now().After(deadline) {
			return nil, errors.New("another host serves this session")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitStopped waits until no host holds the session, up to wait.
func (f Folder) WaitStopped(wait time.Duration) bool {
	for deadline := time.Now().Add(wait); f.Running(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// Running reports whether a host holds the session (its lock, which a
// killed host loses with its process: no stale pid to trust).
func (f Folder) Running() bool {
	l, err := f.lock(aliveLock, syscall.LOCK_SH|syscall.LOCK_NB)
	if err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	l.Release()
	return false
}

// SocketPath is the session's unix socket.
func (f Folder) SocketPath() string { return f.path(sockFile) }

// MaxSocketPath is what fits in sockaddr_un.sun_path with its NUL.
const MaxSocketPath = 107

// Listen makes the session's socket (0600), replacing a stale one.
func (f Folder) Listen() (net.Listener, error) {
	os.Remove(f.SocketPath())
	var ln net.Listener
	err := f.viaShortPath(func(p string) error {
		var err error
		ln, err = net.Listen("unix", p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on the session socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(f.SocketPath(), 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on the session socket: %w", err)
	}
	return ln, nil
}

// dial connects to the session's socket (Connect then presents the key).
func (f Folder) dial() (net.Conn, error) {
	var c net.Conn
	err := f.viaShortPath(func(p string) error {
		var err error
		c, err = net.Dial("unix", p)
		return err
	})
	return c, err
}

// viaShortPath calls fn with the session socket's path, or a shorter
// one (see ViaShortPath).
func (f Folder) viaShortPath(fn func(string) error) error { return ViaShortPath(f.SocketPath(), fn) }

// ViaShortPath calls fn with the path of a unix socket, or, when that is
// longer than sun_path holds, with the same file reached through an open
// descriptor of its folder (/proc/self/fd/N/name, Linux).
func ViaShortPath(p string, fn func(string) error) error {
	if len(p) <= MaxSocketPath {
		return fn(p)
	}
	dir, err := os.Open(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer dir.Close()
	short := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(p))
	if _, err := os.Stat(filepath.Dir(short)); err != nil {
		return fmt.Errorf("the socket path %s is longer than %d bytes and /proc is not available: use a shorter VIS_HOME", p, MaxSocketPath)
	}
	return fn(short)
}

// writePrivate replaces a session file atomically, readable by its owner only.
func writePrivate(path string, data []byte) error {
	if err := atomicfile.Write(path, data); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}
