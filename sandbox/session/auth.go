package session

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// A request on a session's socket proves nothing about who sent it: the
// jailed code of any session may find a way to connect (a descriptor
// passed around, a race on a path, a kernel without unix-socket rules).
// So every connection first presents the session's key, a secret the host
// makes at its start and keeps in a 0600 file of the session folder,
// outside the state and temp folders the jail may read, and the host also
// requires the peer to run as its own user. Only vis-agent's clients,
// which run outside the jail, read the key.

// keyFile holds the running host's key, hex.
const keyFile = "key"

// keyBytes is the key's length before hex.
const keyBytes = 32

// keyLineMax bounds the line a host reads before it knows the client.
const keyLineMax = 2*keyBytes + 64

// authTimeout bounds how long a host waits for a connection's key line.
const authTimeout = 10 * time.Second

// ErrRefused is a connection the host did not let in.
var ErrRefused = errors.New("refused: a request on a session's socket must carry this session's key, which only vis-agent's own clients read from the session folder")

// ErrNoHost is a socket no host answers on.
var ErrNoHost = errors.New("no host answers on the session's socket")

// KeyPath is the file of the session's key (hidden from the session's
// code, as the socket is).
func (f Folder) KeyPath() string { return f.path(keyFile) }

// NewKey makes a fresh key for a host that is starting, and publishes it
// (0600, replaced whole) before the host listens: clients read it after
// they connect, so they always present the key of the host that answers.
func (f Folder) NewKey() ([]byte, error) {
	key, err := NewKeyFile(f.KeyPath())
	if err != nil {
		return nil, fmt.Errorf("the session's key: %w", err)
	}
	return key, nil
}

// NewKeyFile makes a fresh key and writes it to path (0600 from its start,
// replaced whole), for a listener of this user that is starting (a
// session's host, a --host target's multiplexer).
func NewKeyFile(path string) ([]byte, error) {
	raw := make([]byte, keyBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("make a key: %w", err)
	}
	key := []byte(hex.EncodeToString(raw))
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return key, nil
}

// keyLine is the first line a client writes.
type keyLine struct {
	V   int    `json:"v"`
	Key string `json:"key"`
}

// Connect connects to the session's host and presents its key; the
// connection then carries the protocol's requests. ErrNoHost: none
// answers.
func (f Folder) Connect() (net.Conn, error) {
	c, err := f.dial()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoHost, err)
	}
	// The key goes to a host of this user only (as the host lets in only
	// clients of its user).
	if err := SamePeerUser(c); err != nil {
		c.Close()
		return nil, errors.New("the process listening on the session's socket runs as another user: it is not sent the session's key")
	}
	line, err := KeyLine(f.KeyPath())
	if err == nil {
		_, err = c.Write(line)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w (a host of an older vis-agent publishes none: stop it with that vis-agent)", err)
	}
	return c, nil
}

// KeyLine is the first line of a connection to a listener of this user
// (which the caller checked): the key read from path, a small regular file
// (never through a link), as the listener's Authenticate reads it.
func KeyLine(path string) ([]byte, error) {
	key, err := fsutil.ReadRegular(path, 2*keyBytes)
	if err != nil {
		return nil, fmt.Errorf("read the key %s: %w", path, err)
	}
	return protocol.Line(keyLine{V: protocol.Version, Key: string(key)})
}

// Authenticate is the host's check of a new connection: the peer runs as
// this process's user and its first line carries key (compared in
// constant time). It returns the connection's reader, positioned after
// that line; on ErrRefused the caller tells the client and closes.
func Authenticate(c net.Conn, key []byte) (io.Reader, error) {
	if err := SamePeerUser(c); err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(authTimeout))
	defer c.SetReadDeadline(time.Time{})
	// A small buffer: a connection that is not let in costs little.
	br := bufio.NewReaderSize(c, keyLineMax)
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil, io.EOF
		}
		return nil, ErrRefused
	}
	var kl keyLine
	if json.Unmarshal(line, &kl) != nil || subtle.ConstantTimeCompare([]byte(kl.Key), key) != 1 {
		return nil, ErrRefused
	}
	return br, nil
}

// SamePeerUser refuses a peer of another user, which the socket's 0600
// mode already keeps out unless it is root.
func SamePeerUser(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ErrRefused
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ErrRefused
	}
	uid, uerr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, uerr = peerUID(int(fd)) }); err != nil || uerr != nil {
		return ErrRefused
	}
	if uid != os.Getuid() {
		return fmt.Errorf("%w (the peer runs as uid %d)", ErrRefused, uid)
	}
	return nil
}
