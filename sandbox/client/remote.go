package client

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/vis-agent/vis-agent/internal/headbuf"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// Remote is a session on a Target. A request goes through this machine's
// multiplexer of the target (remotemux: one engine connection carrying
// every request as a stream of its own) when Mux is set and it can be
// reached or started; else it runs the engine's command, whose standard
// input and output carry the protocol to `vis-agent sandbox connect`
// there (one connection per request, or one OpenSSH keeps alive with
// ControlMaster).
type Remote struct {
	Target Target
	// Args are connect's flags: --session, --workspace and the jail
	// flags, which the remote vis-agent checks as its own run does.
	Args []string
	// Mux reaches the multiplexers (nil: none, VIS_SANDBOX_MUX=0).
	Mux *remotemux.Config
}

// OpenRemote is the client of a session on t, named by m (its workspace
// is the remote machine's; "" is connect's working folder there),
// through mux's multiplexer when mux is not nil.
func OpenRemote(t Target, m session.Meta, args []string, mux *remotemux.Config) *Session {
	return &Session{Meta: m, Remote: &Remote{Target: t, Args: args, Mux: mux}}
}

// remoteLink is a connection to a remote session: the engine's process,
// or a stream of the multiplexer.
type remoteLink interface {
	io.ReadWriteCloser
	// failure explains a connection that ended before the final answer:
	// answered says the session had answered something (a block
	// started).
	failure(url string, answered bool) error
}

// remoteConn is the engine's process: its standard input and output are
// the connection.
type remoteConn struct {
	cmd    *exec.Cmd
	in     *os.File
	out    *os.File
	stderr *lockedHead
	waited chan struct{}
	err    error // Wait's, after waited
	once   sync.Once
}

// lockedHead keeps the start of the engine's stderr (its own errors, or
// the remote vis-agent's when connect cannot start).
type lockedHead struct {
	mu sync.Mutex
	headbuf.Writer
}

func (l *lockedHead) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Writer.Write(p)
}

// lastLine is the last non-empty line the engine wrote to stderr.
func (l *lockedHead) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(l.Bytes)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// closeWait bounds how long Close waits for the engine once its input is
// closed, before it kills it.
const closeWait = 3 * time.Second

// dial connects to connect there, with --no-start unless start: through
// the multiplexer, else (none can be started: the remote vis-agent is too
// old, the engine fails) with the engine's command, whose errors then
// tell why; and sends request, one encoded message.
func (r *Remote) dial(start bool, request []byte) (remoteLink, error) {
	args := r.Args
	if !start {
		args = append([]string{"--no-start"}, args...)
	}
	if r.Mux != nil {
		if c, err := r.Mux.Connect(r.Target.URL, args, request); err == nil {
			return &muxConn{UnixConn: c}, nil
		}
	}
	c, err := r.dialEngine(args)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(request); err != nil {
		why := c.failure(r.Target.URL, false)
		c.Close()
		return nil, fmt.Errorf("%w: %w", why, err)
	}
	return c, nil
}

// dialEngine starts the engine's command: connect there with args.
func (r *Remote) dialEngine(args []string) (*remoteConn, error) {
	stderr := &lockedHead{Writer: headbuf.Writer{Max: 8 << 10}}
	cmd, in, out, err := remotemux.StartEngine(r.Target.Command(args), stderr, closeWait)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", r.Target.URL, err)
	}
	c := &remoteConn{cmd: cmd, in: in, out: out, stderr: stderr, waited: make(chan struct{})}
	go func() {
		if err := cmd.Wait(); !errors.Is(err, exec.ErrWaitDelay) {
			c.err = err
		}
		close(c.waited)
		// What the engine wrote is still to be read; a process it left
		// behind holding the pipe (a backgrounded ssh master) must not
		// keep the reader waiting past that.
		out.SetReadDeadline(time.Now().Add(closeWait))
	}()
	return c, nil
}

// Read reads the engine's output; the end of the engine is the end of it.
func (c *remoteConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = io.EOF
	}
	return n, err
}

func (c *remoteConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// Close ends the connection: the engine's input closes (connect there
// disconnects from the session, as a local client that leaves), and the
// engine is waited for, then killed.
func (c *remoteConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		select {
		case <-c.waited:
		case <-time.After(closeWait):
			c.cmd.Process.Kill()
			<-c.waited
		}
		c.out.Close()
	})
	return nil
}

func (c *remoteConn) failure(url string, answered bool) error {
	c.in.Close()
	select {
	case <-c.waited:
	case <-time.After(closeWait):
	}
	why := c.stderr.lastLine()
	if why == "" && !answered && c.err != nil {
		why = c.err.Error()
	}
	return dropped(url, answered, why)
}

// dropped is the error of a connection to url that ended before the final
// answer, why (the engine's last word) if known.
func dropped(url string, answered bool, why string) error {
	if answered {
		if why == "" {
			why = "the connection dropped"
		}
		return fmt.Errorf("%w: the connection to %s ended (%s); a block goes on running there", ErrRemoteDropped, url, why)
	}
	if why == "" {
		why = "the connection ended"
	}
	return fmt.Errorf("%w: %s: %s", ErrRemoteDropped, url, why)
}

// muxConn is a stream of the multiplexer. Its Close (the connection's)
// ends the stream at once: connect there reads the end of its input, as
// when the engine's input closes. Its own end is not waited for: it has
// nothing to do after its last answer (stop's comes once the host has
// gone).
type muxConn struct{ *net.UnixConn }

func (c *muxConn) failure(url string, answered bool) error {
	c.Close()
	return dropped(url, answered, "")
}

// ErrRemoteDropped is a remote connection that ended before the session's
// final answer.
var ErrRemoteDropped = errors.New("no answer from the remote session")

// errFromEvent is the error of a final "error" event: a session that is
// not running is ErrNotRunning, as locally.
func errFromEvent(ev protocol.Event) error {
	if ev.Kind == protocol.KindNotRunning {
		return ErrNotRunning
	}
	return errors.New(ev.Message)
}

// remoteCall sends one request of a connect-level op (protocol.Op*):
// answered by the remote vis-agent itself, from its store.
func (s *Session) remoteCall(req protocol.Request, fn func(protocol.Event)) (protocol.Event, error) {
	return s.call(req, false, fn)
}

// remoteJSON is remoteCall for an op answering JSON in Data, decoded into v.
func (s *Session) remoteJSON(req protocol.Request, v any) error {
	ev, err := s.remoteCall(req, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(ev.Data), v); err != nil {
		return fmt.Errorf("%s answered %s: %w", s.Remote.Target.URL, req.Op, err)
	}
	return nil
}

// remoteAttachment streams one version of an attachment through the
// connection; a short or malformed stream is the reader's error, so a
// caller writing a file whole keeps none of it.
func (s *Session) remoteAttachment(d attachments.Descriptor) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		var n int64
		var bad error
		_, err := s.remoteCall(protocol.Request{Op: protocol.OpAttachmentRead, Name: d.ID}, func(ev protocol.Event) {
			if ev.Ev != protocol.EvData || bad != nil {
				return
			}
			b, err := base64.StdEncoding.DecodeString(ev.Data)
			if err != nil {
				bad = fmt.Errorf("%s sent a malformed chunk: %w", s.Remote.Target.URL, err)
				return
			}
			n += int64(len(b))
			if _, err := pw.Write(b); err != nil {
				bad = err
			}
		})
		if err == nil {
			err = bad
		}
		if err == nil && n != d.Size {
			err = fmt.Errorf("%s sent %d bytes of %s, not %d", s.Remote.Target.URL, n, d.Filename, d.Size)
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// Bridge serves one request that arrived on a connection (connect's
// standard input, in) as a local client of this session: it connects,
// starting the host when start, sends req and passes whatever follows on
// in (a cancel) to the host, and the host's events to out, unchanged,
// until the host closes the connection.
//
// A dropped connection (in ends, or out no longer takes the answer) is
// not a client that left: the host would interrupt its block. The host's
// connection stays open until the answer ends, read to nowhere, so a
// started block goes on; only a follow, which has no end, closes at once.
// A remote client that wants its block stopped sends a cancel first.
func (s *Session) Bridge(req protocol.Request, in io.Reader, out io.Writer, start bool) error {
	c, err := s.connect(start)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := protocol.Write(c, req); err != nil {
		return fmt.Errorf("write to the session's host: %w", err)
	}
	go func() {
		io.Copy(c, in)
		if req.Op == protocol.OpFollow {
			c.Close()
		}
	}()
	if _, err := io.Copy(out, c); err != nil && !errors.Is(err, net.ErrClosed) {
		io.Copy(io.Discard, c)
		return fmt.Errorf("pass the session's answer on: %w", err)
	}
	return nil
}
