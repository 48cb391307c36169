// Package protocol is the one place that defines how a sandbox session's
// processes talk: a client (`vis-agent sandbox run` and the other sandbox
// commands, the REPL, the MCP server, all through sandbox/client) with the
// session's host, and the host with its interpreter
// child. Both links carry the same framing and the same two message types.
//
// # Framing
//
// One JSON object per line (UTF-8, '\n'-terminated, no line longer than
// MaxLine). Every request carries "v": Version; a peer that sees another
// version answers one "error" event and closes the link.
//
// # Client and host (the session's unix socket)
//
// A client connects and first writes one line, {"v": Version, "key": K},
// where K is the session's key: a secret its host made at its start and
// keeps in a 0600 file of the session folder that the jailed code cannot
// read (see session.Connect). The host checks it (in constant time) and
// that the peer runs as its own user; otherwise it answers one "error"
// event and closes the connection, whatever the request. The client then
// writes one Request and reads Events until the final one
// ("result", "defs", "is_complete", "completions", "status", "ok" or
// "error"), then the host closes the
// connection. Requests by op:
//
//   - run: Code, TimeoutMS (0 = the default), Client (who runs it: the
//     owner of the block, named in the journal and the live view), Echo, Policy (the jail the
//     block asks for; a child started with another one is snapshotted and
//     replaced first, and the restart notice says why). The host answers "wait"
//     when another block holds the session for more than a second,
//     "started" when the block goes to the interpreter (a client that
//     loses a host before "started" may send the block again), "note"
//     (Kind "restart" then "repair") before the block's output, "out" events
//     (Stream "stdout" or "stderr") while it runs, and one "result". The
//     "wait" event's Message names the client whose block runs. After its run request a client may send one more
//     line, {"op": "cancel"}: a block not started yet is withdrawn (it never
//     runs; its "result" is the KeyboardInterrupt of a block interrupted
//     before it started), a started one gets
//     SIGINT as with interrupt, but only while it is still the running
//     block, so a cancel never interrupts another client's block. A client
//     that disconnects does the same: its waiting block is withdrawn, its
//     running one interrupted. Client names the sender (see interrupt).
//   - defs: Name, Pattern, Limit, Offset, Details, JSON: the listing as
//     Data (text, or the JSON of the session's describe() when JSON is set).
//   - is_complete: Code; answers "is_complete" with Kind "complete",
//     "incomplete" (codeop's rules, as python's REPL decides whether Enter
//     runs the input or continues it) or "invalid".
//   - completions: Code, the word before a cursor; answers "completions"
//     with the names completing it (rlcompleter's rules), one per line in
//     Data.
//   - status: the host's Status.
//   - interrupt: interrupts the caller's block holding the session, else
//     the caller's oldest one waiting for it (a block interrupted before
//     its child started it does not run: its result is a KeyboardInterrupt
//     error); the caller's blocks are those of the same Client (Client.Owns),
//     every block with Any or without Client. "ok" whose Message says whose
//     block was stopped, or "error" naming the client whose block runs
//     when none of the caller's does.
//   - follow: Client; the live view of the session's blocks. The host
//     answers "ok", then, until the client closes the connection, pushes
//     the blocks other clients run (not the ones of the same Client ID):
//     "block" (Kind "start", Data the code, Client whose block it is) as the block gets the
//     session's turn (a follower that comes while a block runs gets its
//     "block" start at once), its "note" and "out" events as they come, and
//     "block" (Kind "end", Result) after it. A follower that falls behind
//     by more than a MiB loses output, and an "out" event on "stderr"
//     says how much.
//   - journal: "ok" once every block that finished is in the session's
//     journal (sandbox/journal), which the host writes after the block's
//     result, and the snapshot after the last block is saved; the client
//     then reads the files (the log, an export).
//   - evict: another session's host frees memory: the child is
//     snapshotted and stopped unless a block runs; "ok" or "error".
//   - stop / restart (Force: also while a block runs): the child is
//     snapshotted and stopped; stop also ends the host. "ok", or "error"
//     when a block runs and Force is not set. A restart with Fresh (the
//     snapshot is discarded; the old child is killed, not saved) or Drop
//     (names left out of the snapshot) starts the new child at once, so
//     that the snapshot holds what was asked for before "ok".
//   - rewind (To a block, or Back N from the current state's; neither:
//     1): the session's state becomes the one after that block, from its
//     history: the host asks the child where (history: "history" with
//     History, or "error" saying why there is none), stops it (saving),
//     starts the next one on that snapshot and answers "ok" with the
//     "[Sandbox rewound]" notice as Message and History; "error" when a
//     block runs.
//
// # Through `vis-agent sandbox connect` (another machine)
//
// A client on another machine runs `vis-agent sandbox connect` there (over
// ssh, kubectl exec, docker exec) and writes the same requests to its
// standard input, without the key line: connect is a client of that
// machine, presenting the key itself. It reads the first request, refuses
// another Version in one "error" event naming both, and passes the
// request (a run's Policy replaced by the one its own flags and its
// user's settings give, when the request names one) and what follows to
// the host, the host's events back, unchanged. A session connect does not
// start (--no-start) that has no host answers "error" with Kind
// KindNotRunning. Connect answers these ops itself, from that machine's
// store, with no host:
//
//   - list: Data, the JSON of `vis-agent sandbox list --json`'s rows.
//   - attachments: Data, the JSON list of descriptors (Limit: how many of
//     the newest commentable versions carry their comments).
//   - attachment: Name (id or filename), AttachmentVersion; Data, the
//     descriptor as JSON.
//   - attachment_read: Name, an attachment id; "data" events (Data,
//     base64 chunks of the bytes), then "ok".
//   - comment: Name, AttachmentVersion, Code the text; Data, the comment.
//   - rm: Force; the session is deleted there; "ok".
//
// # Host and child (a socketpair the child inherits as file descriptor 3)
//
// The host first sends the child one line, the session's description
// (child.Info: name, workspace, why the previous child stopped, the jail
// policy), and nothing more until the child is ready: the child reads it
// before its jail, unbuffered, and hands the link to the driver. (The
// host's first child may have started before the host knew the session.)
// The child then restores the session's snapshot (after "restoring" when
// there is one: a child that dies or hangs after it died restoring, and the
// host starts the next one with the snapshot discarded), keeping what the
// restore prints for the restart notice, and sends "ready"
// (Python's version in Data, the minor in Line, and in Message what its
// jail's kernel layer could not enforce, "" when nothing). The host then sends
// requests with the same shape:
//
//   - run: Code, Echo. The child answers "note" (the restart notice,
//     once), "running" as the block starts (from then on SIGINT interrupts
//     it; the host holds back an interrupt that comes earlier until it
//     reads "running"), "out" events, then "result" whose Syntax is set when Python
//     refused the block as it stands: the block did not run, and the host
//     repairs it (asking "compile") and sends it again or reports the error.
//     The host adds the attachments the block stored meanwhile (its host
//     calls) to the result.
//     The result's Written lists the checked files (sandbox/check) the
//     session's code opened for writing or renamed onto since the last
//     block, which the host then checks.
//     The result goes out before the snapshot is saved (its Snapshot is
//     "saving"): the child answers "compile" meanwhile, and the host sends
//     "save" once the block's client has its result.
//   - save: the child saves the snapshot after the last block and answers
//     "saved", whose Result holds Snapshot, Saved and Preload. Any other
//     request finds that save done first.
//   - ping: answers "pong" (the host asks before each block, so a child
//     killed a moment ago, or one that does not answer within 10 s, is
//     replaced before the block, not under it).
//   - compile: Code; answers "compiled" with Syntax nil when it compiles.
//     With File set, Code is a file's bytes, one per character (U+0000 to
//     U+00FF), compiled as the module file File (no top-level await; a
//     byte order mark and a coding declaration read as Python reads
//     files): the check of the files a block changed.
//   - defs, is_complete, completions: as for the client, one answer each.
//   - history: To, Back as a rewind's; answers "history" with History,
//     or "error" saying why no block fits.
//   - notice: answers "ok" with the restart notice the next block would
//     start with (Message), which it then no longer shows.
//   - exit: the child saves its snapshot and exits; with Force (a
//     rewind's) the save checks only the values its blocks named.
//
// A standby child (child.Info.Standby) answers "standby" instead of
// restoring: it imported child.Info.Preload and waits. The host swaps it in
// with one child.Wake line (op "restore": the restart reason, Discard,
// Drop, Rewind), after which it restores and answers as above ("restoring",
// "ready"), or answers "stale" and exits when a file its imports loaded
// changed since.
//
// Threads a block started may go on printing after it: their "out" events
// may come before the answer to any later request; the host passes them to
// the block that runs, or to its log between blocks.
//
// Interrupts are a real SIGINT to the child's process (KeyboardInterrupt at
// the next bytecode); a stuck child gets SIGUSR1 (faulthandler writes every
// thread's stack to file descriptor 4) and then SIGKILL. The child's own
// file descriptors 1 and 2 (output of C code and subprocesses) are a pipe
// the host forwards to the running block's client; it drains them before
// the block's result. What Python code writes to them with os.write goes
// over the link with print's output instead, in the order written; output
// of C code may still overtake printed text.
//
// # Host calls (a second socketpair the child inherits as file descriptor 5)
//
// The session's functions (attach, shell, cat, ...) are Python in the
// child whose work the host does. They reach it through one entry point,
// the built-in module _vis_host of the shim (sandbox/child/hostcall.c); the
// descriptor's number is held in C memory only. A call is one frame each
// way: a JSON header line ('\n'-terminated, at most MaxCallHeader bytes)
// that begins {"id":N,"size":M and a raw payload of exactly M bytes after
// it (the bytes of an attachment: never base64 inside JSON).
//
//   - Request (CallRequest): id (chosen by the shim, increasing), size,
//     op, args (an object, per op). The host answers for the session it
//     serves, under the policy the child was started with: no request
//     names a session.
//   - Answer (CallAnswer): the request's id, size, ok, and result (JSON)
//     or error (CallError: a Python exception type and a one-line
//     message). An answer to a line that was not a request has id 0.
//
// Calls are one at a time (the shim holds a lock; threads wait). A call
// waits for its answer with the GIL released; SIGINT during the wait
// raises KeyboardInterrupt and abandons the call, whose answer arrives
// later and is skipped by id. Because of that lock, a request that
// arrives while an earlier one is still running means the earlier one was
// abandoned: the host cancels it. The host also cancels the calls under
// way when their block ends, and shortly after it interrupts the block;
// a cancelled call answers InterruptedError. Past 4 calls under way (only
// requests written to the descriptor directly get there) a request is
// refused with a RuntimeError. A payload is read by its op as it comes
// (attach streams it into the store), and an answer's payload is written
// from its file: the host never holds one whole. The host bounds every
// header and payload it reads and answers a request it cannot parse with
// an error; garbage written to the descriptor costs only the session's
// own calls, and a child that does not read an answer for 30 s loses its
// link (its Python process is replaced before the next block).
//
// Ops: session; attach (args filename, kind, media_type, commentable,
// block; payload the bytes), attachments, attachment (ref, version),
// attachment_read (ref, version; answer payload the bytes); shell_start
// (cmd, timeout_ms, cwd, wait_ms), shell_state (id), shell_wait (id,
// max_ms), shell_logs (id, n), shell_stop (id); cat (path, offset, limit),
// grep (pattern, path, glob, limit), patch (path, old, new, check,
// compiled: see sandbox/host's patch op); install
// (specs, base: the block's requirements and its environment's
// name==version pins; answer the installed distributions, see
// sandbox/install).
package protocol

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Timeouts of a block, shared by the host, which enforces them, and the
// clients, which say what a requested timeout becomes.
const (
	DefaultTimeout = 300 * time.Second
	MinTimeout     = 3 * time.Second
	MaxTimeout     = 35 * time.Minute
)

// ClampTimeout keeps a requested timeout within [MinTimeout, MaxTimeout];
// zero is the default.
func ClampTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultTimeout
	case d < MinTimeout:
		return MinTimeout
	case d > MaxTimeout:
		return MaxTimeout
	}
	return d
}

// Version is the protocol's version; bump it when a message changes
// meaning.
const Version = 1

// Ops answered by `vis-agent sandbox connect` itself (see the package doc).
const (
	OpList           Op = "list"
	OpAttachments    Op = "attachments"
	OpAttachment     Op = "attachment"
	OpAttachmentRead Op = "attachment_read"
	OpComment        Op = "comment"
	OpRemove         Op = "rm"
)

// EvData is an event carrying a chunk of bytes (base64 in Data).
const EvData Ev = "data"

// KindNotRunning is the Kind of the "error" of a session without a host,
// for a request that does not start one.
const KindNotRunning = "not_running"

// MaxLine bounds one message: a block's source or an output chunk fits.
const MaxLine = 64 << 20

// OutChunk is the largest "out" event a writer sends: output is split so
// that no peer holds much of it at once.
const OutChunk = 64 << 10

// MaxCallHeader bounds a host call's header line.
const MaxCallHeader = 16 << 20

// CallRequest is the header of a host call (see the package doc).
type CallRequest struct {
	ID   uint64          `json:"id"`
	Size int64           `json:"size"`
	Op   Call            `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Call names a host call: what a block's Python asks its host to do
// (vis_sandbox's call(NAME, ...) in sandbox/child/py).
type Call string

// The host calls.
const (
	CallSession        Call = "session"     // the session's description, again
	CallInstall        Call = "install"     // install(): packages by the host's uv
	CallJournal        Call = "journal"     // journal(): the session's earlier blocks
	CallAttach         Call = "attach"      // attach(): a file or bytes into the store (with a payload)
	CallAttachments    Call = "attachments" // attachments(): the session's list
	CallAttachment     Call = "attachment"  // one attachment's description
	CallAttachmentRead Call = "attachment_read"
	CallShellStart     Call = "shell_start" // shell(): a command, run by the host
	CallShellState     Call = "shell_state"
	CallShellStop      Call = "shell_stop"
	CallShellWait      Call = "shell_wait"
	CallShellLogs      Call = "shell_logs"
	CallCat            Call = "cat"   // cat(): a file's lines
	CallGrep           Call = "grep"  // grep(): files' matching lines
	CallPatch          Call = "patch" // patch(): an edit, checked
)

// CallAnswer is the header of a host call's answer. ID and Size come
// first: the shim reads them by position.
type CallAnswer struct {
	ID     uint64     `json:"id"`
	Size   int64      `json:"size"`
	OK     bool       `json:"ok"`
	Result any        `json:"result,omitempty"`
	Error  *CallError `json:"error,omitempty"`
}

// CallError is a host call that failed: the Python exception the child
// raises (a builtin type name) and a one-line message.
type CallError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Op names a request (see the package doc for what each asks).
type Op string

// Requests of a client to the host (the first block) and of the host to
// the child (the second).
const (
	OpRun         Op = "run"
	OpCancel      Op = "cancel"
	OpDefs        Op = "defs"
	OpIsComplete  Op = "is_complete"
	OpCompletions Op = "completions"
	OpStatus      Op = "status"
	OpInterrupt   Op = "interrupt"
	OpEvict       Op = "evict"
	OpStop        Op = "stop"
	OpRestart     Op = "restart"
	OpFollow      Op = "follow"
	OpJournal     Op = "journal"
	OpRewind      Op = "rewind"

	OpPing    Op = "ping"
	OpCompile Op = "compile"
	OpSave    Op = "save"
	// OpHistory asks which block a rewind (To, Back) goes to (EvHistory);
	// OpNotice takes the restart notice the next block would show (EvOK).
	OpHistory Op = "history"
	OpNotice  Op = "notice"
	OpExit    Op = "exit"
	// OpWake swaps a standby child in (child.Wake).
	OpWake Op = "restore"
)

// Ev names an event (see the package doc for when each comes).
type Ev string

// Events of the host to a client and of the child to the host. The final
// answer to a client's request is one of EvResult, EvDefs, EvIsComplete,
// EvCompletions, EvStatus, EvOK or EvError.
const (
	EvWait        Ev = "wait"
	EvStarted     Ev = "started"
	EvNote        Ev = "note"
	EvOut         Ev = "out"
	EvResult      Ev = "result"
	EvDefs        Ev = "defs"
	EvIsComplete  Ev = "is_complete"
	EvCompletions Ev = "completions"
	EvStatus      Ev = "status"
	EvOK          Ev = "ok"
	EvError       Ev = "error"
	EvBlock       Ev = "block"

	EvRestoring Ev = "restoring"
	EvReady     Ev = "ready"
	EvRunning   Ev = "running"
	EvPong      Ev = "pong"
	EvCompiled  Ev = "compiled"
	EvSaved     Ev = "saved"
	EvHistory   Ev = "history"
	// A standby child's: it is waiting; its imports changed on disk.
	EvStandby Ev = "standby"
	EvStale   Ev = "stale"
)

// An "out" event's Stream, and a "note" event's Kind.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	NoteRestart  = "restart"
	NoteRepair   = "repair"
	// A "block" event's Kind (a follow): another client's block begins
	// or ends.
	BlockStart = "start"
	BlockEnd   = "end"
)

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

// Client is who sends a request: its kind ("run" for the command line,
// "repl", "mcp"), a name (the MCP client's, "" when none) and an id that
// one client process keeps for all its requests ("" for a command-line
// interrupt, which owns the blocks of every `sandbox run`).
type Client struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
	ID   string `json:"id,omitempty"`
}

// Owns reports whether a request from c may interrupt a block of b
// without asking for any block: the same client process, or, for an
// interrupt without an id, a block of the same kind.
func (c Client) Owns(b Client) bool {
	if c.ID != "" {
		return c.ID == b.ID
	}
	return c.Kind == b.Kind
}

// String names the client for people and models: "mcp: claude-code",
// "repl", "sandbox run".
func (c Client) String() string {
	kind := c.Kind
	switch kind {
	case "":
		kind = "an older client"
	case "run":
		kind = "sandbox run"
	}
	if c.Name != "" {
		return kind + ": " + c.Name
	}
	return kind
}

// Policy is the jail of a session's interpreter child, fixed when the
// child starts.
type Policy struct {
	// Jail confines files to the roots and refuses new processes, signals
	// to other processes and foreign code (the audit hook and the kernel).
	Jail bool `json:"jail"`
	// Network: sockets and name lookups allowed.
	Network bool `json:"network"`
	// Hosts, with Network, is an allow list: the child and its commands
	// reach nothing but the host's proxy, which lets through the hosts
	// it allows (sandbox/netpolicy's patterns, sets expanded).
	Hosts *Hosts `json:"hosts,omitempty"`
	// MaxThreads caps the interpreter's threads, also without the jail
	// (0: no cap).
	MaxThreads int `json:"max_threads"`
	// MemoryMB caps the child's address space, also without the jail (0:
	// no cap).
	MemoryMB int `json:"memory_mb"`
	// Roots and ReadOnlyRoots are extra folders the jailed code may write,
	// or read, besides the workspace, the session's folder and Python's.
	Roots         []string `json:"roots,omitempty"`
	ReadOnlyRoots []string `json:"read_only_roots,omitempty"`
}

// Hosts are the allow and deny lists of a session's network.
type Hosts struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny,omitempty"`
}

// Proxied reports whether p's network is the host's proxy alone.
func (p Policy) Proxied() bool { return p.Network && p.Hosts != nil }

// NetworkText is the network of p in a few words: "off", "on", or
// "allow pypi.org, files.pythonhosted.org (deny x.org)".
func (p Policy) NetworkText() string {
	switch {
	case !p.Network:
		return "off"
	case p.Hosts == nil:
		return "on"
	}
	s := "allow " + strings.Join(p.Hosts.Allow, ", ")
	if len(p.Hosts.Allow) == 0 {
		s = "allow nothing"
	}
	if len(p.Hosts.Deny) > 0 {
		s += " (deny " + strings.Join(p.Hosts.Deny, ", ") + ")"
	}
	return s
}

// Equal reports whether p and q are the same policy.
func (p Policy) Equal(q Policy) bool {
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(q)
	return string(a) == string(b)
}

// String is a short description for notices and listings:
// "jail on, network on, 64 threads, 4096 MB".
func (p Policy) String() string {
	onOff := map[bool]string{true: "on", false: "off"}
	s := fmt.Sprintf("jail %s, network %s", onOff[p.Jail], p.NetworkText())
	if p.MaxThreads > 0 {
		s += fmt.Sprintf(", %d threads", p.MaxThreads)
	}
	if p.MemoryMB > 0 {
		s += fmt.Sprintf(", %d MB", p.MemoryMB)
	}
	switch n := len(p.Roots) + len(p.ReadOnlyRoots); n {
	case 0:
	case 1:
		s += ", 1 extra root"
	default:
		s += fmt.Sprintf(", %d extra roots", n)
	}
	return s
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

// Status is a host's state, for `vis-agent sandbox list` and tests.
type Status struct {
	Name      string `json:"name"`
	Workspace string `json:"workspace"`
	HostPID   int    `json:"host_pid"`
	ChildPID  int    `json:"child_pid"`
	Busy      bool   `json:"busy"`
	IdleSec   int64  `json:"idle_seconds"`
	Python    string `json:"python"`
	// Jailed and Network are the running child's access, as its session
	// sees it (session.access).
	Jailed  bool `json:"jailed"`
	Network bool `json:"network"`
	// Attachments is how many attachments the session has, once its
	// host has opened the attachments store (nil before).
	Attachments *int `json:"attachments,omitempty"`
}

// Conn reads and writes messages on one link.
type Conn struct {
	r *bufio.Reader
	w io.Writer
}

// NewConn frames messages over rw.
func NewConn(r io.Reader, w io.Writer) *Conn {
	return &Conn{r: bufio.NewReaderSize(r, 64<<10), w: w}
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

// Receive reads the next message into v.
func (c *Conn) Receive(v any) error {
	line, err := c.readLine()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("a malformed message: %w", err)
	}
	return nil
}

func (c *Conn) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := c.r.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(line) > MaxLine {
			return nil, fmt.Errorf("a message longer than %d bytes", MaxLine)
		}
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

// FileCode is the Code of a compile request for a file's bytes (see
// Request.File): each byte one character, U+0000 to U+00FF, which JSON
// carries whatever the bytes are, and Python's "latin-1" codec turns back
// into them.
func FileCode(data string) string {
	ascii := true
	for i := 0; i < len(data) && ascii; i++ {
		ascii = data[i] < 0x80
	}
	if ascii {
		return data
	}
	runes := make([]rune, len(data))
	for i := 0; i < len(data); i++ {
		runes[i] = rune(data[i])
	}
	return string(runes)
}
