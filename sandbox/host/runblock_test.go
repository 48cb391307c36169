package host

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// fakeChild is the child's side of a proc with no CPython: the test
// speaks the child's protocol on link, and a process of its own (a
// sleep that ignores SIGINT and faulthandler's signal, as a block that
// does not unwind) stands for the child's process and holds the child's
// end of the link too, so that the link closes when it is killed.
type fakeChild struct {
	t    *testing.T
	end  net.Conn
	link *protocol.Conn
	cmd  *exec.Cmd
}

// newFakeChild is a live proc whose child is a fakeChild.
func newFakeChild(t *testing.T) (*proc, *fakeChild) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	hostFile, childFile := os.NewFile(uintptr(fds[0]), "link"), os.NewFile(uintptr(fds[1]), "link")
	defer hostFile.Close()
	defer childFile.Close()
	hostEnd, err := net.FileConn(hostFile)
	if err != nil {
		t.Fatal(err)
	}
	childEnd, err := net.FileConn(childFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `trap "" INT USR1; exec sleep 600`)
	cmd.ExtraFiles = []*os.File{childFile}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pipe := func() *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return r
	}
	c := &proc{process: cmd.Process, link: hostEnd, conn: protocol.NewConn(hostEnd, hostEnd), started: time.Now(),
		exited: make(chan struct{}), stacks: newTail(pipe(), 1<<20), stdout: newForwarder(pipe(), protocol.StreamStdout, io.Discard),
		stderr: newForwarder(pipe(), protocol.StreamStderr, io.Discard), calls: hostcalls.NewServer(nil, nil, nil, 0), minor: 12}
	go func() {
		c.state, _ = cmd.Process.Wait()
		close(c.exited)
	}()
	f := &fakeChild{t: t, end: childEnd, link: protocol.NewConn(childEnd, childEnd), cmd: cmd}
	t.Cleanup(func() {
		c.kill()
		<-c.exited
		hostEnd.Close()
		childEnd.Close()
	})
	return c, f
}

// receive reads the host's next request.
func (f *fakeChild) receive() protocol.Request {
	req, err := f.link.ReceiveRequest()
	if err != nil {
		f.t.Errorf("the fake child's next request: %v", err)
	}
	return req
}

func (f *fakeChild) send(ev protocol.Event) {
	if err := f.link.Send(ev); err != nil {
		f.t.Errorf("the fake child's %s: %v", ev.Ev, err)
	}
}

// fakeHost is a host whose child is c, fresh (no ping before its first
// block), and the events it sends a block's client.
func fakeHost(t *testing.T, c *proc) (*Host, *sink, func() []protocol.Event) {
	h := &Host{cfg: Config{Meta: session.Meta{Name: "fake", Workspace: t.TempDir()}, Folder: session.Folder{Dir: t.TempDir()},
		Logs: t.TempDir(), Log: io.Discard}, child: c, fresh: freshChild{c: c, ready: time.Now()}, memoryChecked: time.Now()}
	var mu sync.Mutex
	var events []protocol.Event
	out := &sink{w: io.Discard, tap: func(ev protocol.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}}
	return h, out, func() []protocol.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]protocol.Event(nil), events...)
	}
}

// runFake runs code as a block of h (holding the turn), with the given
// timeout in ms, and returns its ticket and result.
func runFake(h *Host, out *sink, code string, timeoutMS int64) (*ticket, protocol.Result, *proc) {
	tk := h.enqueue(protocol.Client{Kind: "run"})
	h.begin(tk)
	defer h.finish(tk)
	res, saving := h.runBlock(protocol.Request{Op: protocol.OpRun, Code: code, TimeoutMS: timeoutMS}, out, tk, &watch{h: h, withdrawn: make(chan struct{})})
	return tk, res, saving
}

// A block Python refuses is repaired, with the child compiling the
// repair's candidates, then run; the client sees the repair's note
// before the output, and the result says it was repaired.
func TestRunBlockRepairsThenRuns(t *testing.T) {
	c, f := newFakeChild(t)
	h, out, events := fakeHost(t, c)
	const broken = "print((1)"
	ran := make(chan string, 1)
	go func() {
		if req := f.receive(); req.Op != protocol.OpRun || req.Code != broken {
			t.Errorf("first request %+v", req)
		}
		f.send(protocol.Event{Ev: protocol.EvResult, Syntax: &protocol.SyntaxError{Message: "'(' was never closed", Line: 1, Column: 6, Text: broken}})
		for {
			req := f.receive()
			switch req.Op {
			case protocol.OpCompile:
				ev := protocol.Event{Ev: "compiled"}
				if strings.Count(req.Code, "(") != strings.Count(req.Code, ")") {
					ev.Syntax = &protocol.SyntaxError{Message: "'(' was never closed", Line: 1, Column: 6}
				}
				f.send(ev)
			case protocol.OpRun:
				ran <- req.Code
				f.send(protocol.Event{Ev: protocol.EvRunning})
				f.send(protocol.Event{Ev: protocol.EvOut, Stream: protocol.StreamStdout, Data: "1\n"})
				f.send(protocol.Event{Ev: protocol.EvResult, Result: &protocol.Result{Saved: 1, Snapshot: "saving"}})
				return
			default:
				t.Errorf("request %+v", req)
				return
			}
		}
	}()
	_, res, saving := runFake(h, out, broken, 0)
	if code := <-ran; code != "print((1))" {
		t.Errorf("ran %q after the repair", code)
	}
	if !res.Repaired || res.RepairNote == "" || res.Error != nil || res.Saved != 1 {
		t.Errorf("result %+v", res)
	}
	if saving != c {
		t.Error("a result whose snapshot is saving does not name its child")
	}
	var kinds []string
	for _, ev := range events() {
		kinds = append(kinds, string(ev.Ev)+":"+ev.Kind+ev.Data)
	}
	want := []string{"started:", "note:repair" + res.RepairNote, "out:1\n"}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", kinds, want)
	}
}

// A block whose child loses its link in the middle (the child died) ends
// with SandboxRestarted saying how it died, after the output it sent.
func TestRunBlockChildLost(t *testing.T) {
	c, f := newFakeChild(t)
	h, out, events := fakeHost(t, c)
	go func() {
		f.receive()
		f.send(protocol.Event{Ev: protocol.EvRunning})
		f.send(protocol.Event{Ev: protocol.EvOut, Stream: protocol.StreamStdout, Data: "partial"})
		f.end.Close()
		c.kill()
	}()
	_, res, saving := runFake(h, out, "crash()", 0)
	if res.Error == nil || res.Error.Type != "SandboxRestarted" || !strings.Contains(res.Error.Message, "killed by signal 9") || res.TimedOut {
		t.Errorf("result %+v (error %+v)", res, res.Error)
	}
	if saving != nil {
		t.Error("a lost child's block is saving")
	}
	if evs := events(); len(evs) != 2 || evs[1].Data != "partial" {
		t.Errorf("events %+v", evs)
	}
	h.mu.Lock()
	busy := h.busy
	h.mu.Unlock()
	if busy {
		t.Error("the session is still busy after its block ended")
	}
}

// A block whose child does not answer is interrupted at its timeout
// (SIGINT, which this one ignores), and retired unwindGrace later: its
// hang record is written, it is killed, and the block ends timed out
// with the retire's reason. Real time: about MinTimeout + unwindGrace.
func TestRunBlockTimeoutInterruptsThenRetires(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a timeout and its grace")
	}
	c, f := newFakeChild(t)
	h, out, _ := fakeHost(t, c)
	go func() {
		f.receive()
		f.send(protocol.Event{Ev: protocol.EvRunning})
		// Hung: only the process holds the child's end now.
		f.end.Close()
	}()
	start := time.Now()
	tk, res, _ := runFake(h, out, "while True: pass", 1)
	took := time.Since(start)
	if res.Error == nil || res.Error.Type != "SandboxRestarted" || !res.TimedOut ||
		!strings.Contains(res.Error.Message, "did not stop within 5 seconds of its timeout's interrupt") {
		t.Errorf("result %+v (error %+v)", res, res.Error)
	}
	if !tk.interrupted {
		t.Error("the block was not interrupted at its timeout")
	}
	if least := protocol.MinTimeout + unwindGrace; took < least {
		t.Errorf("retired after %s, before the timeout and its grace (%s)", took, least)
	}
	hangs, _ := filepath.Glob(filepath.Join(h.cfg.Logs, "*", "sandbox-fake-*", "hang.json"))
	if len(hangs) != 1 {
		t.Errorf("hang records %q", hangs)
	}
}
