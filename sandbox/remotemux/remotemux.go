// Package remotemux carries many requests of the session protocol over one
// connection to a --host machine, as OpenSSH's ControlMaster does for its
// sessions. An engine command (ssh, kubectl exec, docker exec) costs a
// session of the engine and a vis-agent started there, tens of
// milliseconds a warm block would otherwise pay on every request.
//
// Three parts:
//   - Run is the multiplexer: a detached process of this machine, one per
//     target (`vis-agent sandbox mux URL`), which runs the engine's command
//     once, with `vis-agent sandbox connect --mux` there, and listens on a
//     unix socket under $VIS_HOME/sandbox/remote (a 0700 folder; peers of
//     another user are refused, and a connection first presents the key
//     the multiplexer wrote beside the socket, as on a session's socket).
//   - Config.Connect is a client's door: it dials that socket, starting the
//     multiplexer when none answers (one per target, under a lock), and
//     returns a connection carrying one request, as the engine's standard
//     input and output do without it.
//   - Serve is the remote side: each stream is one request, whose first
//     line is connect's flags; the caller serves it as connect serves one
//     on its standard input and output, under the same flags and policy.
//
// The streams are yamux's (github.com/hashicorp/yamux): each has its own
// flow control and half-close, so a cancel racing an answer, a follow
// without end and a client that goes away behave as on a connection of
// their own.
package remotemux

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Environment variables: EnvOff=0 turns the multiplexer off (every
// request runs the engine's command); EnvIdle is the idle time (a Go
// duration) after which a multiplexer without streams exits.
const (
	EnvOff  = "VIS_SANDBOX_MUX"
	EnvIdle = "VIS_SANDBOX_MUX_IDLE"
)

// header is a stream's first line: connect's flags for its request.
type header struct {
	Args []string `json:"args"`
}

// headerMax bounds a stream's first line.
const headerMax = 64 << 10

// Ack is the byte the multiplexer sends a client once its stream is open:
// a client that gets none knows its request went nowhere, and may send it
// again through a new multiplexer (sandbox/client/runpath reads it too).
const Ack = '+'

// Header is a stream's first line, its newline included: connect's flags
// for its request (sandbox/client/runpath sends it as a run plan saved it).
func Header(args []string) ([]byte, error) {
	return protocol.Line(header{Args: args})
}

// config is yamux's configuration of both sides.
func config(log io.Writer) *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = log
	// An engine whose connection stalls this long has lost it (yamux's
	// default, 10 s, is short for a congested ssh).
	c.ConnectionWriteTimeout = 30 * time.Second
	return c
}

// Paths are the files of the multiplexer of one URL in a folder:
// its socket, the key a connection presents first, the lock of the
// clients that start it, its log, and why it last failed to start.
type Paths struct{ Socket, Key, Lock, Log, Failed string }

// PathsOf are the files of url's multiplexer in dir: named after a hash
// of the URL, so that any URL makes a short, plain file name.
func PathsOf(dir, url string) Paths {
	sum := sha256.Sum256([]byte(url))
	base := dir + "/" + hex.EncodeToString(sum[:10])
	return Paths{Socket: base + ".sock", Key: base + ".key", Lock: base + ".lock", Log: base + ".log", Failed: base + ".failed"}
}

// stdio is the engine's standard output and input as one connection.
type stdio struct {
	io.Reader
	io.Writer
	close func() error
}

func (s stdio) Close() error { return s.close() }

// Serve serves the streams the multiplexer opens on in and out (connect's
// standard input and output), each with handle, which reads the request on
// in and answers on out; log gets yamux's complaints. It returns when the
// connection has ended and every request has been served.
func Serve(in io.Reader, out io.Writer, log io.Writer, handle func(args []string, in io.Reader, out io.Writer)) error {
	sess, err := yamux.Server(stdio{Reader: in, Writer: out, close: func() error { return nil }}, config(log))
	if err != nil {
		return fmt.Errorf("serve the multiplexed connection: %w", err)
	}
	defer sess.Close()
	var wg sync.WaitGroup
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			break
		}
		wg.Go(func() {
			defer st.Close()
			br := bufio.NewReaderSize(st, headerMax)
			line, err := br.ReadSlice('\n')
			var h header
			if err == nil {
				err = json.Unmarshal(line, &h)
			}
			if err != nil {
				protocol.Write(st, protocol.Event{Ev: protocol.EvError, Message: fmt.Sprintf("a multiplexed request without connect's flags: %v", err)})
				return
			}
			handle(h.Args, br, st)
		})
	}
	// A block whose client has gone goes on; its answer is read to
	// nowhere by its handler, which this waits for.
	wg.Wait()
	return nil
}

// errNoAck is a multiplexer that closed a connection without opening its
// stream: nothing was sent on.
var errNoAck = errors.New("the multiplexer did not open a stream")
