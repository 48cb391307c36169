// Package protocol is the one definition of how a sandbox session's
// processes talk; it imports no package of the module, so that every peer
// can import it. Each file is one link, each op and event documented on its
// constant: client.go, a client (through sandbox/client) and the session's
// host over the session's unix socket (list.go, the rows of OpList);
// child.go, the host and its interpreter child over a socketpair, with the
// messages only they exchange; calls.go, the host calls of the child's
// Python; policy.go, the policy a child runs under and the limits the
// peers share; argv.go, the command lines and descriptors of the session's
// processes.
//
// # Framing
//
// One JSON object per line (UTF-8, '\n'-terminated, no line longer than
// MaxLine), read within the link's Bounds (bounds.go: the child's link
// is narrower). Every request carries "v": Version; a peer that sees another
// version answers one EvError and closes the link. Both links carry the
// same two message types, Request and Event.
package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol's version; bump it when a message changes
// meaning.
const Version = 1

// MaxLine bounds one message: a block's source or an output chunk fits.
const MaxLine = 64 << 20

// OutChunk is the largest "out" event a writer sends: output is split so
// that no peer holds much of it at once.
const OutChunk = 64 << 10

// Op names a request (each constant says what it asks and what answers
// it).
type Op string

// Ev names an event (each constant, or the op it answers, says when it
// comes).
type Ev string

// Request is what a client asks the host, or the host asks the child.
type Request struct {
	V         int     `json:"v"`
	Op        Op      `json:"op"`
	Code      string  `json:"code,omitempty"`
	TimeoutMS int64   `json:"timeout_ms,omitempty"`
	Echo      bool    `json:"echo,omitempty"`
	Name      string  `json:"name,omitempty"`
	Pattern   string  `json:"pattern,omitempty"`
	Limit     int     `json:"limit,omitempty"`
	Offset    int     `json:"offset,omitempty"`
	Details   bool    `json:"details,omitempty"`
	JSON      bool    `json:"json,omitempty"`
	Force     bool    `json:"force,omitempty"`
	Policy    *Policy `json:"policy,omitempty"`
	// Fresh and Drop (restart): the new child starts with the snapshot
	// discarded, or with these names left out of it.
	Fresh bool     `json:"fresh,omitempty"`
	Drop  []string `json:"drop,omitempty"`
	// To and Back (rewind): the block whose state comes back, or how many
	// blocks back from the current state's (neither: 1).
	To   int `json:"to,omitempty"`
	Back int `json:"back,omitempty"`
	// Reason (the host's OpRewindHere) says why the state changes, for
	// the notice.
	Reason string `json:"reason,omitempty"`
	// File names the file whose bytes a compile's Code holds.
	File string `json:"file,omitempty"`
	// AttachmentVersion is the version an attachment op names (0 the
	// latest, negative counting back).
	AttachmentVersion int `json:"attachment_version,omitempty"`
	// Client says who sends a run or an interrupt (nil: an older client,
	// whose interrupt reaches any block).
	Client *Client `json:"client,omitempty"`
	// Any (interrupt): also another client's block.
	Any bool `json:"any,omitempty"`
	// Trust (run) is a local client's trust and proxy variables
	// (session.Trust: CA bundles, proxies; never anything else), as
	// KEY=VALUE, empty when it has none: install() runs uv with those of
	// the client that ran the latest block, so a host started by a client
	// without them (an MCP client's minimal environment) is fixed by the
	// next one that has them. nil: a remote or older client, which changes
	// nothing.
	Trust *[]string `json:"trust,omitempty"`
}

// Event is one answer: a step of a running block or the final answer.
type Event struct {
	Ev      Ev           `json:"ev"`
	Stream  string       `json:"stream,omitempty"`
	Kind    string       `json:"kind,omitempty"`
	Data    string       `json:"data,omitempty"`
	Line    int          `json:"line,omitempty"`
	Result  *Result      `json:"result,omitempty"`
	Status  *Status      `json:"status,omitempty"`
	Syntax  *SyntaxError `json:"syntax,omitempty"`
	Message string       `json:"message,omitempty"`
	// Client: whose block a "block" event of a follow is.
	Client *Client `json:"client,omitempty"`
	// History: the child's answer to OpHistory.
	History *History `json:"history,omitempty"`
}

// Result is how a block ended.
type Result struct {
	Error      *BlockError `json:"error"`
	Repaired   bool        `json:"repaired"`
	RepairNote string      `json:"repair_note"`
	Restarted  bool        `json:"restarted"`
	Notice     string      `json:"notice"`
	TimedOut   bool        `json:"timed_out"`
	DurationMS int64       `json:"duration_ms"`
	// Snapshot is what the save after the block did: "saved",
	// "unchanged", or "" when it failed or did not run; "saving" when
	// the result went out before the save (the save ends before the next
	// block starts).
	Snapshot string `json:"snapshot,omitempty"`
	// Block is the block's number in the session's Python process (its
	// tracebacks' "<block N>"), what a rewind's To names; 0 when it did
	// not run there.
	Block int `json:"block,omitempty"`
	// Saved is how many names the snapshot holds after the block:
	// helpers, classes, imports and variables (child to host only; -1
	// when unknown).
	Saved int `json:"saved,omitempty"`
	// Written are the checked files the session's code opened for
	// writing or renamed onto, and the paths inside a .git it wrote or
	// linked to (absolute paths), WrittenMore that there were more than
	// the child keeps (child to host only).
	Written     []string `json:"written,omitempty"`
	WrittenMore bool     `json:"written_more,omitempty"`
	// Preload are the top-level modules from outside the workspace and the
	// standard library that the snapshot after the block needs, which a
	// warm standby imports ahead (child to host only).
	Preload []string `json:"preload,omitempty"`
	// Checks are the files the block created or changed that no longer
	// parse (host to client), also shown at the end of its output.
	Checks []FileCheck `json:"checks,omitempty"`
	// Attachments are what the block attached (attach(), and the figures
	// it left open or showed), in order; the host fills them in.
	Attachments []Attached `json:"attachments,omitempty"`
	// Git are the files under a .git of the workspace that the jail does
	// not keep read-only, changed while the block ran (relative to the
	// workspace; host to client), also named at the end of its output:
	// git runs its hooks and settings as the user.
	Git []string `json:"git,omitempty"`
}

// BlockError is a block that raised, was refused, or did not parse.
// Traceback is the text shown to people (stderr); the other fields are
// for programs.
type BlockError struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	Excerpt   string `json:"excerpt"`
	Traceback string `json:"traceback,omitempty"`
}

// SyntaxError is Python's refusal of a block's source (its report on
// source that does not compile): the child sends it, and the host hands it
// to the repair engine (sandbox/repair) unchanged.
type SyntaxError struct {
	Message string `json:"message"` // e.g. "unterminated string literal (detected at line 1)"
	Line    int    `json:"line"`
	Column  int    `json:"column"` // 1-based, characters
	Text    string `json:"text"`   // the offending line, may be empty
}

// FileCheck is a file a block left not parsing.
type FileCheck struct {
	Path    string `json:"path"`    // relative to the workspace
	Checked string `json:"checked"` // the checker: "python 3.13", "json", "toml", "yaml"
	Line    int    `json:"line"`    // 0 when the parser does not say
	Column  int    `json:"column"`
	Message string `json:"message"` // the parser's (Python's) message
	// Fix is the repair engine's exact fix, its changes as its notes
	// read ("" when it has none); Fixed says it was applied
	// (sandbox.fix_files).
	Fix   string `json:"fix,omitempty"`
	Fixed bool   `json:"fixed,omitempty"`
}

// Attached is an attachment a block stored: enough to name it and to read
// it from the session's attachments store.
type Attached struct {
	ID        string `json:"id"`
	Filename  string `json:"filename"`
	Version   int    `json:"version"`
	Kind      string `json:"kind"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
}

// History is where a rewind goes: Block, the block whose snapshot comes
// back; Current, the block whose state the session holds (0: unknown);
// Line, Block and the blocks it ran on, newest first, as far as the
// history goes; Blocks, every block the history holds.
type History struct {
	Block   int   `json:"block"`
	Current int   `json:"current,omitempty"`
	Line    []int `json:"line,omitempty"`
	Blocks  []int `json:"blocks,omitempty"`
}

// Conn reads and writes messages on one link.
type Conn struct {
	r *bufio.Reader
	w io.Writer
	b Bounds
}

// NewConn frames messages over rw; it reads within EventBounds until
// Bound says otherwise.
func NewConn(r io.Reader, w io.Writer) *Conn {
	return &Conn{r: bufio.NewReaderSize(r, 64<<10), w: w, b: EventBounds}
}

// Bound sets the bounds of the messages c reads (see Bounds), and
// returns c.
func (c *Conn) Bound(b Bounds) *Conn {
	c.b = b
	return c
}

// Send writes one message; it is not safe for concurrent use.
func (c *Conn) Send(v any) error { return Write(c.w, v) }

// Write writes one message to w.
func Write(w io.Writer, v any) error {
	b, err := Line(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Line is one message as it goes on a link, its newline included.
func Line(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode a message: %w", err)
	}
	return append(b, '\n'), nil
}

// Buffered is what the connection reads from, the bytes it buffered
// beyond the last message first: the rest of the stream, for a peer that
// passes it on unread.
func (c *Conn) Buffered() io.Reader { return c.r }

// Receive reads the next message into v. A message past the link's
// bounds is a *BoundsError, after which the stream is not to be read
// again.
func (c *Conn) Receive(v any) error {
	line, err := c.readLine()
	if err != nil {
		return err
	}
	if err := c.b.Check(line); err != nil {
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("a malformed message: %w", err)
	}
	return nil
}

func (c *Conn) readLine() ([]byte, error) { return ReadLine(c.r, c.b.Line) }

// ReadLine reads one line of at most max bytes, its newline included (a
// longer one is a *BoundsError, read in part). A long line is read as
// fragments of r's buffer and joined once: what it costs is twice its
// bytes, where growing one slice costs five.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var frags [][]byte
	n := 0
	for {
		frag, err := r.ReadSlice('\n')
		n += len(frag)
		if n > max {
			return nil, &BoundsError{"a message longer than " + bytesText(max)}
		}
		if err == nil {
			line := make([]byte, 0, n)
			for _, f := range frags {
				line = append(line, f...)
			}
			return append(line, frag...), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		frags = append(frags, bytes.Clone(frag))
	}
}

// ReceiveRequest reads a request and checks its version.
func (c *Conn) ReceiveRequest() (Request, error) {
	var r Request
	if err := c.Receive(&r); err != nil {
		return r, err
	}
	if r.V != Version {
		return r, fmt.Errorf("protocol version %d, this vis-agent speaks %d (stop the session with the vis-agent that started it)", r.V, Version)
	}
	return r, nil
}
