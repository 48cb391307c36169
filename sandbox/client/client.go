// Package client is the one way front ends (the CLI's sandbox commands,
// the REPL, the MCP server) reach a sandbox session: it finds the
// session's host, starting it when none answers (one host however many
// clients start at once), speaks the protocol of package protocol, and
// reads what the session keeps (its journal, its attachments, the list of
// sessions) for them.
package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/detached"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// ErrNotRunning is returned by requests that do not start a host when the
// session has none.
var ErrNotRunning = errors.New("the session is not running")

// hostStartTimeout bounds how long a client waits for a new host.
const hostStartTimeout = time.Minute

// maxHostLog is the size past which a new host starts its log afresh.
const maxHostLog = 1 << 20

// Session is a client's handle on one session.
type Session struct {
	Folder session.Folder
	Meta   session.Meta
	// HostCommand is the command line that starts a host for the folder
	// (the vis-agent binary and its hidden `sandbox host` command).
	HostCommand []string
	// Env is the client's environment (nil: this process's), of which a
	// host it starts keeps what session.Environ keeps.
	Env []string
	// Remote, when set, is the machine the session is on (Folder is then
	// unset: every request goes through the connection).
	Remote *Remote
	// Client is who this process is to the host: its runs carry it, and
	// its interrupts reach only its own blocks unless they ask for any
	// (zero: an older client's requests, whose interrupt reaches any).
	Client protocol.Client
}

// NewClient is a client of kind (and name) with an id of its own.
func NewClient(kind, name string) protocol.Client {
	var b [8]byte
	rand.Read(b[:])
	return protocol.Client{Kind: kind, Name: name, ID: hex.EncodeToString(b[:])}
}

// client is s.Client for a request, nil when unset.
func (s *Session) client() *protocol.Client {
	if s.Client.Kind == "" {
		return nil
	}
	c := s.Client
	return &c
}

// Open makes (or finds) the folder of the session named in m under root.
func Open(root string, m session.Meta, hostCommand []string) (*Session, error) {
	return OpenFor(root, m, func(string, bool) ([]string, error) { return hostCommand, nil })
}

// OpenFor is Open with the command that starts the session's host made by
// host, from the path of the session's folder and whether a host runs
// there, before the folder is made (an error of host makes none): a front
// end decides the jail and the host's command line from them without
// reading session folders itself.
func OpenFor(root string, m session.Meta, host func(dir string, running bool) ([]string, error)) (*Session, error) {
	if err := session.CheckName(m.Name); err != nil {
		return nil, err
	}
	f := session.Find(root, m)
	hostCommand, err := host(f.Dir, f.Running())
	if err != nil {
		return nil, err
	}
	if f, err = session.Create(root, m); err != nil {
		return nil, err
	}
	return &Session{Folder: f, Meta: m, HostCommand: hostCommand}, nil
}

// dial connects to the session, here (its socket) or on its remote
// machine (the engine's standard input and output, or the multiplexer's
// stream), and sends request, one encoded message.
func (s *Session) dial(start bool, request []byte) (io.ReadWriteCloser, error) {
	if s.Remote != nil {
		return s.Remote.dial(start, request)
	}
	c, err := s.connect(start)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(request); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %w", errHostGone, err)
	}
	return c, nil
}

// connect dials the host; with start, it starts one when none answers.
func (s *Session) connect(start bool) (net.Conn, error) {
	c, err := s.Folder.Connect()
	switch {
	case err == nil:
		return c, nil
	case !errors.Is(err, session.ErrNoHost):
		return nil, err
	case !start || len(s.HostCommand) == 0:
		return nil, ErrNotRunning
	}
	lock, err := s.Folder.LockStart()
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// Another client may have started it while this one waited.
	if c, err := s.Folder.Connect(); err == nil {
		return c, nil
	}
	if err := s.startHost(); err != nil {
		return nil, err
	}
	c, err = s.Folder.Connect()
	if err != nil {
		return nil, fmt.Errorf("connect to the session's host: %w", err)
	}
	return c, nil
}

// startHost starts the session's host, detached, and waits until it
// listens (it says so on a pipe) or says why it cannot.
// trust is what a run request carries of this client's trust and proxy
// variables: nil for a remote session (paths and proxies of this machine
// mean nothing on another).
func (s *Session) trust() *[]string {
	if s.Remote != nil {
		return nil
	}
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	t := session.TrustEnviron(env)
	return &t
}

func (s *Session) startHost() error {
	cmd := exec.Command(s.HostCommand[0], s.HostCommand[1:]...)
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = session.Environ(env)
	return detached.Start(cmd, detached.Options{What: "the session's host", ReadyFD: protocol.HostReadyFD,
		Log: s.Folder.Dir + "/" + session.LogFile, MaxLog: maxHostLog, Timeout: hostStartTimeout})
}

// call sends one request and hands every event to fn until the final one,
// which it returns. With start, a host that dies before it answered
// anything (killed just before the client connected) is replaced and the
// request sent again, once.
func (s *Session) call(req protocol.Request, start bool, fn func(protocol.Event)) (protocol.Event, error) {
	return s.callContext(context.Background(), req, start, fn)
}

// callContext is call for a run request that ctx may cancel: the host is
// told on the request's connection, and withdraws the block or interrupts
// it (it alone).
func (s *Session) callContext(ctx context.Context, req protocol.Request, start bool, fn func(protocol.Event)) (protocol.Event, error) {
	ev, answered, err := s.callOnce(ctx, req, start, fn)
	if err != nil && start && !answered && errors.Is(err, errHostGone) && ctx.Err() == nil && s.Remote == nil {
		for deadline := time.Now().Add(2 * time.Second); s.Folder.Running() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		ev, _, err = s.callOnce(ctx, req, start, fn)
	}
	return ev, err
}

var errHostGone = errors.New("the session's host stopped before it answered")

func (s *Session) callOnce(ctx context.Context, req protocol.Request, start bool, fn func(protocol.Event)) (protocol.Event, bool, error) {
	req.V = protocol.Version
	line, err := protocol.Line(req)
	if err != nil {
		return protocol.Event{}, false, err
	}
	c, err := s.dial(start, line)
	if err != nil {
		return protocol.Event{}, false, err
	}
	defer c.Close()
	// gone is a connection that ended before the final answer.
	gone := func(answered bool) error {
		if rc, ok := c.(remoteLink); ok {
			return rc.failure(s.Remote.Target.URL, answered)
		}
		return errHostGone
	}
	pc := protocol.NewConn(c, c)
	// The host's answer to a cancel comes on this connection (the
	// "result" of a withdrawn or interrupted block), so the read goes on.
	stop := context.AfterFunc(ctx, func() { pc.Send(protocol.Request{V: protocol.Version, Op: protocol.OpCancel}) })
	defer stop()
	answered := false
	for {
		var ev protocol.Event
		if err := pc.Receive(&ev); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
				return ev, answered, gone(answered)
			}
			return ev, answered, fmt.Errorf("read from the session's host: %w", err)
		}
		answered = true
		switch ev.Ev {
		case protocol.EvStarted, protocol.EvOut, protocol.EvNote, protocol.EvWait, protocol.EvData:
			if fn != nil {
				fn(ev)
			}
		case protocol.EvError:
			return ev, true, errFromEvent(ev)
		default:
			return ev, true, nil
		}
	}
}

// RunOptions are a block's settings.
type RunOptions struct {
	Timeout time.Duration // 0: the default; the host clamps it
	Echo    bool          // print a trailing expression's repr
	// Policy is the jail the block asks for (nil: the session's own); a
	// child under another one is replaced first, with the notice.
	Policy *protocol.Policy
}

// Run runs a block, starting the host if needed; fn sees the output and
// notes as they come.
func (s *Session) Run(code string, opts RunOptions, fn func(protocol.Event)) (protocol.Result, error) {
	return s.RunContext(context.Background(), code, opts, fn)
}

// RunContext is Run that ctx cancels: a block still waiting for the
// session (behind another client's) is withdrawn and never runs, its
// result a KeyboardInterrupt "before it started"; a running one gets
// KeyboardInterrupt. Either way the result still comes back.
func (s *Session) RunContext(ctx context.Context, code string, opts RunOptions, fn func(protocol.Event)) (protocol.Result, error) {
	ev, err := s.callContext(ctx, protocol.Request{Op: protocol.OpRun, Code: code, TimeoutMS: opts.Timeout.Milliseconds(), Echo: opts.Echo, Policy: opts.Policy,
		Client: s.client(), Trust: s.trust()}, true, fn)
	if err != nil {
		return protocol.Result{}, err
	}
	if ev.Result == nil {
		return protocol.Result{}, fmt.Errorf("the session's host answered %q to a block", ev.Ev)
	}
	return *ev.Result, nil
}

// DefsOptions select what Defs lists.
type DefsOptions struct {
	Name, Pattern string
	Limit, Offset int
	Details, JSON bool
	// Running asks a running host only: none is started, nor another
	// when this one stops before it answers.
	Running bool
}

// Defs is what defs() shows in the session (JSON: its description).
func (s *Session) Defs(o DefsOptions) (string, error) {
	ev, err := s.call(protocol.Request{Op: protocol.OpDefs, Name: o.Name, Pattern: o.Pattern, Limit: o.Limit, Offset: o.Offset,
		Details: o.Details, JSON: o.JSON}, !o.Running, nil)
	return ev.Data, err
}

// Status asks a running host about itself.
func (s *Session) Status() (protocol.Status, error) {
	ev, err := s.call(protocol.Request{Op: protocol.OpStatus}, false, nil)
	if err != nil {
		return protocol.Status{}, err
	}
	if ev.Status == nil {
		return protocol.Status{}, errors.New("the session's host sent no status")
	}
	return *ev.Status, nil
}

// Stop snapshots and stops the session (its child and host); force also
// stops a running block.
func (s *Session) Stop(force bool) error {
	if _, err := s.call(protocol.Request{Op: protocol.OpStop, Force: force}, false, nil); err != nil {
		return err
	}
	// A remote connect answers once its host has stopped.
	if s.Remote == nil && !s.Folder.WaitStopped(10*time.Second) {
		return errors.New("the session's host did not exit after it stopped")
	}
	return nil
}

// RestartOptions are a restart's settings.
type RestartOptions struct {
	Force bool // also while a block runs (it is killed)
	// Fresh discards the snapshot: the new child starts empty. Drop
	// leaves these names out of the restore, and so out of the snapshot.
	// Either makes the host start the new child before it answers.
	Fresh bool
	Drop  []string
}

// Restart replaces the session's child with a new one restored from the
// snapshot (or, with Fresh or Drop, from what is asked of it).
func (s *Session) Restart(o RestartOptions) error {
	// A stopped session is started for a fresh restart or one that drops
	// names: the snapshot must be the one asked for when it returns.
	start := o.Fresh || len(o.Drop) > 0
	_, err := s.call(protocol.Request{Op: protocol.OpRestart, Force: o.Force, Fresh: o.Fresh, Drop: o.Drop, Client: s.client()}, start, nil)
	return err
}

// Interrupt raises KeyboardInterrupt in this client's running block (any
// client's with anyBlock); when none runs yet, its oldest block waiting
// for the session (or for its Python to start) is cancelled: it does not
// run. The answer says whose block was stopped; an error names the client
// whose block runs when it is not this one's.
func (s *Session) Interrupt(anyBlock bool) (string, error) {
	ev, err := s.call(protocol.Request{Op: protocol.OpInterrupt, Client: s.client(), Any: anyBlock}, false, nil)
	return ev.Message, err
}

// IsComplete says whether Enter runs code or continues it, by the rules of
// python's REPL as the session's CPython applies them: "complete",
// "incomplete" or "invalid" (which runs, to be repaired or reported).
func (s *Session) IsComplete(code string) (string, error) {
	ev, err := s.call(protocol.Request{Op: protocol.OpIsComplete, Code: code}, true, nil)
	return ev.Kind, err
}

// Completions are the names that complete word (a name, or a dotted
// attribute path) in the session, by rlcompleter's rules.
func (s *Session) Completions(word string) ([]string, error) {
	ev, err := s.call(protocol.Request{Op: protocol.OpCompletions, Code: word}, true, nil)
	if err != nil || ev.Data == "" {
		return nil, err
	}
	return strings.Split(ev.Data, "\n"), nil
}

// Remove deletes the session: it is stopped (force: also while a block
// runs), then its attachments, folder, snapshot and spill files are
// deleted.
func (s *Session) Remove(force bool) error {
	if s.Remote != nil {
		_, err := s.remoteCall(protocol.Request{Op: protocol.OpRemove, Force: force}, nil)
		return err
	}
	if err := s.Stop(force); err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	if !s.Folder.WaitStopped(5 * time.Second) {
		return fmt.Errorf("session %q did not stop", s.Meta.Name)
	}
	if err := s.removeAttachments(); err != nil {
		return err
	}
	if err := os.RemoveAll(s.Folder.Dir); err != nil {
		return fmt.Errorf("delete the session: %w", err)
	}
	return nil
}

// Report is a block's outcome as programs read it: the object of `sandbox
// run --json`, also the MCP server's structured result.
type Report struct {
	Session    string       `json:"session"`
	Workspace  string       `json:"workspace"`
	Stdout     string       `json:"stdout"`
	Error      *ReportError `json:"error"`
	Repaired   bool         `json:"repaired"`
	RepairNote string       `json:"repair_note"`
	Restarted  bool         `json:"restarted"`
	Notice     string       `json:"notice"`
	TimedOut   bool         `json:"timed_out"`
	DurationMS int64        `json:"duration_ms"`
	// Attachments are what the block attached (figures it left open or
	// showed among them), in order.
	Attachments []protocol.Attached `json:"attachments"`
	// Checks are the files the block left not parsing (the lines its
	// output ends with).
	Checks []protocol.FileCheck `json:"checks,omitempty"`
	// Git are the files under a .git of the workspace, not kept read-only
	// by the jail, that changed while the block ran (a line its output
	// ends with names them).
	Git []string `json:"git,omitempty"`
}

// ReportError is a Report's error: where and why, without the traceback.
type ReportError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Excerpt string `json:"excerpt"`
}

// Report describes a block of this session that printed stdout (both
// streams) and ended as res.
func (s *Session) Report(stdout string, res protocol.Result) Report {
	r := Report{Session: s.Meta.Name, Workspace: s.Meta.Workspace, Stdout: stdout, Repaired: res.Repaired,
		RepairNote: res.RepairNote, Restarted: res.Restarted, Notice: res.Notice, TimedOut: res.TimedOut, DurationMS: res.DurationMS,
		Attachments: res.Attachments, Checks: res.Checks, Git: res.Git}
	if r.Attachments == nil {
		r.Attachments = []protocol.Attached{}
	}
	if e := res.Error; e != nil {
		r.Error = &ReportError{Type: e.Type, Message: e.Message, Line: e.Line, Column: e.Column, Excerpt: e.Excerpt}
	}
	return r
}

// Follow is the session's live view: fn sees the host's "ok" once it
// follows, then the blocks other clients run (not s.Client's own) as they
// run, "block" events around their "note" and "out" events, until ctx ends
// or the host stops (the error then says why). The host must be running.
func (s *Session) Follow(ctx context.Context, fn func(protocol.Event)) error {
	c, err := s.connect(false)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	pc := protocol.NewConn(c, c)
	if err := pc.Send(protocol.Request{V: protocol.Version, Op: protocol.OpFollow, Client: s.client()}); err != nil {
		return fmt.Errorf("follow the session: %w", err)
	}
	var ev protocol.Event
	if err := pc.Receive(&ev); err != nil {
		return fmt.Errorf("follow the session: %w", err)
	}
	if ev.Ev != protocol.EvOK {
		return fmt.Errorf("follow the session: %s", ev.Message)
	}
	fn(ev)
	for {
		ev = protocol.Event{}
		if err := pc.Receive(&ev); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errHostGone
		}
		fn(ev)
	}
}

// Settle returns once the session's journal holds every block that
// finished (its host writes it a moment after each block's result) and
// the snapshot after the last block is saved (the host saves it after the
// result goes out); a session that is not running has nothing pending.
func (s *Session) Settle() error {
	_, err := s.call(protocol.Request{Op: protocol.OpJournal}, false, nil)
	if errors.Is(err, ErrNotRunning) {
		return nil
	}
	return err
}
