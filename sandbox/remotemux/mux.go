package remotemux

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/vis-agent/vis-agent/sandbox/session"
)

// readyFD is the pipe a multiplexer inherits from the client that starts
// it: one line, "ok" or why it could not start.
const readyFD = 3

// DefaultIdle is how long a multiplexer without streams waits for one
// before it exits (as OpenSSH's ControlPersist).
const DefaultIdle = 10 * time.Minute

const (
	// pingTimeout bounds the engine's start: authentication, and the
	// remote vis-agent's first answer.
	pingTimeout = startTimeout - 5*time.Second
	// watchEvery is how often the multiplexer checks that its socket is
	// still its own.
	watchEvery = 500 * time.Millisecond
	// closeWait bounds how long the engine, its input closed, and the
	// streams still passing answers on are waited for at exit.
	closeWait = 3 * time.Second
)

// Options are a multiplexer's.
type Options struct {
	URL string
	// Engine is the command line of the engine running `vis-agent
	// sandbox connect --mux` on the target.
	Engine []string
	Dir    string        // as Config.Dir
	Idle   time.Duration // DefaultIdle when 0
	Log    io.Writer     // its log, which the engine's stderr shares
}

// mux is a running multiplexer.
type mux struct {
	sess   *yamux.Session
	key    []byte
	logger *log.Logger
	idle   time.Duration

	mu     sync.Mutex
	active int
	timer  *time.Timer
	quit   chan string // why it ends
	wg     sync.WaitGroup
}

// Run is the multiplexer of o.URL: it runs the engine, waits for its
// first answer, listens on the socket and says it is ready on the pipe
// it inherited; then it passes each connection on as a stream of its
// own, until it has had none for o.Idle, the engine ends, or its socket
// is removed or replaced (its VIS_HOME deleted).
func Run(o Options) error {
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	ready := os.NewFile(readyFD, "ready")
	say := func(msg string) {
		if ready != nil {
			fmt.Fprintln(ready, msg)
			ready.Close()
			ready = nil
		}
	}
	// A multiplexer may live long: what it and its engine write (the
	// remote vis-agent's warnings, one a request) is bounded.
	o.Log = &cappedLog{w: o.Log, left: maxLog}
	logger := log.New(o.Log, fmt.Sprintf("mux %d: ", os.Getpid()), log.LstdFlags|log.Lmicroseconds)
	err := run(o, logger, say)
	if err != nil {
		say(err.Error())
		logger.Print(err)
	}
	return err
}

func run(o Options, logger *log.Logger, say func(string)) error {
	engine, in, out, err := StartEngine(o.Engine, o.Log, closeWait)
	if err != nil {
		return fmt.Errorf("reach %s: %w", o.URL, err)
	}
	conn := stdio{Reader: out, Writer: in, close: func() error { return errors.Join(in.Close(), out.Close()) }}
	defer stopEngine(engine, conn, logger)
	sess, err := yamux.Client(conn, config(o.Log))
	if err != nil {
		return fmt.Errorf("reach %s: %w", o.URL, err)
	}
	defer sess.Close()
	pinged := make(chan error, 1)
	go func() {
		_, err := sess.Ping()
		pinged <- err
	}()
	select {
	case err = <-pinged:
	case <-time.After(pingTimeout):
		err = fmt.Errorf("no answer within %s", pingTimeout)
	}
	if err != nil {
		return fmt.Errorf("%s did not answer as a multiplexed connect (an older vis-agent there?): %w", o.URL, err)
	}
	p := PathsOf(o.Dir, o.URL)
	// A connection's first line chooses connect's flags there (--no-jail):
	// the socket alone, which jailed code may find a way to reach, is not
	// enough; a client presents this key, which only this user's clients
	// read (published before the socket, as a session's host does).
	key, err := session.NewKeyFile(p.Key)
	if err != nil {
		return err
	}
	ln, err := listen(p.Socket)
	if err != nil {
		return err
	}
	defer ln.Close()
	mine, err := os.Lstat(p.Socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	defer func() {
		// Not a socket a newer multiplexer made in its place.
		if now, err := os.Lstat(p.Socket); err == nil && os.SameFile(now, mine) {
			os.Remove(p.Socket)
		}
	}()
	m := &mux{sess: sess, key: key, logger: logger, idle: o.Idle, quit: make(chan string, 1)}
	m.mu.Lock()
	m.timer = time.AfterFunc(o.Idle, m.idleOut)
	m.mu.Unlock()
	logger.Printf("serving %s on %s", o.URL, p.Socket)
	say("ok")
	go m.accept(ln)
	watch := time.NewTicker(watchEvery)
	defer watch.Stop()
	var why string
	for why == "" {
		select {
		case why = <-m.quit:
		case <-sess.CloseChan():
			why = "the engine's connection ended"
		case <-watch.C:
			if now, err := os.Lstat(p.Socket); err != nil || !os.SameFile(now, mine) {
				why = "its socket was removed or replaced"
			}
		}
	}
	logger.Printf("exits: %s", why)
	ln.Close()
	// The streams end: what the engine had sent is still passed on,
	// then each client reads the end of its connection.
	sess.Close()
	waitGroup(&m.wg, closeWait)
	return nil
}

// listen makes the multiplexer's socket (0600), replacing a stale one
// (the caller holds the start lock: none answered).
func listen(path string) (*net.UnixListener, error) {
	os.Remove(path)
	var ln net.Listener
	err := session.ViaShortPath(path, func(p string) error {
		var err error
		ln, err = net.Listen("unix", p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ul, nil
}

// idleOut ends a multiplexer that has had no stream for its idle time.
func (m *mux) idleOut() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.active == 0 {
		m.stop(fmt.Sprintf("no stream for %s", m.idle))
	}
}

func (m *mux) stop(why string) {
	select {
	case m.quit <- why:
	default:
	}
}

func (m *mux) accept(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			m.stop("its socket closed: " + err.Error())
			return
		}
		m.mu.Lock()
		m.active++
		m.timer.Stop()
		m.mu.Unlock()
		m.wg.Go(func() {
			m.serve(c)
			m.mu.Lock()
			if m.active--; m.active == 0 {
				m.timer.Reset(m.idle)
			}
			m.mu.Unlock()
		})
	}
}

// serve passes one client's connection on as a stream, both ways, each
// direction's end passed on as a half-close.
func (m *mux) serve(c *net.UnixConn) {
	defer c.Close()
	in, err := session.Authenticate(c, m.key)
	if err != nil {
		m.logger.Printf("refused a connection: %v", err)
		return
	}
	st, err := m.sess.OpenStream()
	if err != nil {
		return // no ack: the client may go elsewhere
	}
	defer st.Close()
	if _, err := c.Write([]byte{Ack}); err != nil {
		return
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		io.Copy(st, in)
		// The client's end of input: connect there reads its end.
		st.Close()
	}()
	if _, err := io.Copy(c, st); err != nil {
		// The client went away: the rest of the answer is read to
		// nowhere, so that a block there goes on rather than waiting
		// for a reader.
		io.Copy(io.Discard, st)
	}
	if m.sess.IsClosed() {
		c.Close()
	} else {
		c.CloseWrite()
	}
	<-sent
}

// StartEngine runs an engine's command, whose standard input (in) and
// output (out) are the connection, and stderr its errors; wait bounds how
// long Wait reads stderr after the engine's exit.
func StartEngine(argv []string, stderr io.Writer, wait time.Duration) (cmd *exec.Cmd, in, out *os.File, err error) {
	cmd = exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	// A session of its own: Ctrl-C at the terminal reaches the client,
	// which sends the cancel over the connection, and not the engine,
	// which would drop it; and no terminal to prompt on (the engine's
	// authentication must not need one: keys, an agent, a credential
	// helper).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Pipes of our own, not StdinPipe/StdoutPipe: Wait closes those as
	// the engine exits, which races the read of its last answer (a read
	// then fails with "file already closed" instead of ending).
	inR, in, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		in.Close()
		return nil, nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	// A process the engine leaves behind (a backgrounded ssh master)
	// may hold its stderr: Wait stops reading that soon after the
	// engine's exit, rather than when the last holder exits.
	cmd.WaitDelay = wait
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		in.Close()
		out.Close()
		return nil, nil, nil, err
	}
	return cmd, in, out, nil
}

// stopEngine closes the engine's input (connect there ends once its
// requests are served) and waits for it, then kills it.
func stopEngine(cmd *exec.Cmd, conn io.Closer, logger *log.Logger) {
	conn.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			logger.Printf("the engine ended: %v", err)
		}
	case <-time.After(closeWait):
		cmd.Process.Kill()
		logger.Printf("the engine was killed: %v", <-done)
	}
}

// cappedLog passes the first left bytes written to it on, then drops the
// rest, saying so once.
type cappedLog struct {
	mu   sync.Mutex
	w    io.Writer
	left int64
}

func (c *cappedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.left >= int64(len(p)):
		c.left -= int64(len(p))
		c.w.Write(p)
	case c.left >= 0:
		c.left = -1
		fmt.Fprintf(c.w, "mux %d: the log is full: the rest goes nowhere\n", os.Getpid())
	}
	return len(p), nil
}

// waitGroup waits for wg, up to d.
func waitGroup(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}
