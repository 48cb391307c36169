// Package detached starts vis-agent's background processes (a session's
// host, a remote multiplexer): in a session of their own, their output
// appended to a log, and waits for the line such a process writes on a
// pipe it inherits once it is ready.
package detached

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Options say how to start one.
type Options struct {
	What    string        // names it in errors: "the session's host"
	ReadyFD int           // the descriptor of its ready pipe (3 or more)
	Log     string        // its log, started afresh past MaxLog bytes
	MaxLog  int64         //
	Timeout time.Duration // how long to wait for its line
}

// Start starts cmd detached (its own session, working folder /, output
// to o.Log) with the write end of a pipe as descriptor o.ReadyFD, and
// waits for the line it writes there: "ok", or why it could not start.
// It is reaped by this process while this one lives.
func Start(cmd *exec.Cmd, o Options) error {
	if st, err := os.Stat(o.Log); err == nil && st.Size() > o.MaxLog {
		os.Remove(o.Log)
	}
	log, err := os.OpenFile(o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("start %s: %w", o.What, err)
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start %s: %w", o.What, err)
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr = log, log
	// Entry i is descriptor 3+i.
	cmd.ExtraFiles = make([]*os.File, o.ReadyFD-2)
	cmd.ExtraFiles[o.ReadyFD-3] = w
	cmd.Dir = "/"
	// No terminal, and a Ctrl-C of the client that starts it does not
	// reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start %s: %w", o.What, err)
	}
	go cmd.Wait()
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		if l == "ok" {
			return nil
		}
		if l == "" {
			l = "it exited at once (see " + o.Log + ")"
		}
		return fmt.Errorf("%s did not start: %s", o.What, l)
	case <-time.After(o.Timeout):
		cmd.Process.Kill()
		return fmt.Errorf("%s did not start within %s (see %s)", o.What, o.Timeout, o.Log)
	}
}
