package remotemux

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/detached"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// Config is how a client reaches the multiplexers of its targets.
type Config struct {
	// Dir holds their sockets, locks and logs ($VIS_HOME/sandbox/remote).
	Dir string
	// Command starts the multiplexer of a URL, given as its last
	// argument: `vis-agent sandbox mux`.
	Command []string
	// Env is the multiplexer's environment (the engine's: ssh's agent,
	// kubectl's config), the one of the client that starts it.
	Env []string
}

// startTimeout bounds how long a client waits for a new multiplexer: its
// engine's authentication and the remote vis-agent's first answer.
const startTimeout = time.Minute

// ackTimeout bounds the wait for a multiplexer's ack.
const ackTimeout = 10 * time.Second

// maxLog is the size past which a new multiplexer starts its log afresh.
const maxLog = 1 << 20

// RetryAfter is how long after a multiplexer failed to start (its reason
// in the Failed file) the clients of its URL go without one, rather than
// pay a failing engine run more on every request (a remote vis-agent too
// old to know --mux).
const RetryAfter = 5 * time.Minute

// Connect returns a connection carrying one request to url's session
// machine, whose connect there runs with args: through the multiplexer of
// url, started (detached) when none answers. first, the request's first
// bytes, is sent with the stream's header, before the multiplexer's ack
// is read: a request pays no round trip to it. An error says the
// multiplexer could not be started or reached, and nothing was sent on:
// the caller goes without.
func (c Config) Connect(url string, args []string, first []byte) (*net.UnixConn, error) {
	p := PathsOf(c.Dir, url)
	if conn, err := p.dial(args, first); err == nil {
		return conn, nil
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("start the multiplexer: %w", err)
	}
	if err := os.Chmod(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("start the multiplexer: %w", err)
	}
	unlock, err := lock(p.Lock)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another client may have started it while this one waited.
	if conn, err := p.dial(args, first); err == nil {
		return conn, nil
	}
	if st, err := os.Lstat(p.Failed); err == nil && time.Since(st.ModTime()) < RetryAfter {
		return nil, fmt.Errorf("the multiplexer failed to start %s ago (see %s)", time.Since(st.ModTime()).Round(time.Second), p.Failed)
	}
	if err := c.start(p, url); err != nil {
		os.Remove(p.Failed)
		if f, ferr := os.OpenFile(p.Failed, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600); ferr == nil {
			fmt.Fprintln(f, err)
			f.Close()
		}
		return nil, err
	}
	os.Remove(p.Failed)
	return p.dial(args, first)
}

// lock takes the start lock of a multiplexer.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the multiplexer's start: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the multiplexer's start: %w", err)
	}
	return func() { f.Close() }, nil
}

// dial opens a stream: it connects to the socket, and sends the key, the
// stream's first line and first in one write, then waits for the
// multiplexer's ack, which it sends once the stream is open (only then is
// anything passed on).
func (p Paths) dial(args []string, first []byte) (*net.UnixConn, error) {
	var conn *net.UnixConn
	err := session.ViaShortPath(p.Socket, func(path string) error {
		var err error
		conn, err = net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, err
	}
	// The key and the request go to a process of this user only.
	if err := session.SamePeerUser(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the multiplexer's socket %s is another user's: %w", p.Socket, err)
	}
	msg, err := session.KeyLine(p.Key)
	var line []byte
	if err == nil {
		line, err = Header(args)
	}
	if err == nil {
		_, err = conn.Write(append(append(msg, line...), first...))
	}
	var b [1]byte
	if err == nil {
		conn.SetReadDeadline(time.Now().Add(ackTimeout))
		_, err = conn.Read(b[:])
		conn.SetReadDeadline(time.Time{})
	}
	if err == nil && b[0] != Ack {
		err = errNoAck
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %w", errNoAck, err)
	}
	return conn, nil
}

// start starts url's multiplexer, detached, and waits until it says it
// is ready (once its engine has answered) or why it is not.
func (c Config) start(p Paths, url string) error {
	cmd := exec.Command(c.Command[0], append(c.Command[1:], url)...)
	cmd.Env = c.Env
	return detached.Start(cmd, detached.Options{What: "the multiplexer", ReadyFD: readyFD, Log: p.Log, MaxLog: maxLog, Timeout: startTimeout})
}
