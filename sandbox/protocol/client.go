package protocol

// A client's link: a client (`vis-agent sandbox run` and the other sandbox
// commands, the REPL, the MCP server, all through sandbox/client) and the
// session's host, over the session's unix socket.
//
// A client connects and first writes one line, {"v": Version, "key": K},
// where K is the session's key: a secret its host made at its start and
// keeps in a 0600 file of the session folder that the jailed code cannot
// read (see session.Connect). The host checks it (in constant time) and
// that the peer runs as its own user; otherwise it answers one EvError and
// closes the connection, whatever the request. The client then writes one
// Request and reads Events until the final one (EvResult, EvDefs,
// EvIsComplete, EvCompletions, EvStatus, EvOK or EvError), then the host
// closes the connection.

// Requests of a client to the host. The host sends OpRun, OpDefs,
// OpIsComplete and OpCompletions to its child too, with the same fields;
// the child's other requests are in child.go.
const (
	// OpRun runs a block: Code, TimeoutMS (0 = the default), Client (who
	// runs it: the owner of the block, named in the journal and the live
	// view), Echo, Policy (the jail the block asks for; a child started
	// with another one is snapshotted and replaced first, and the restart
	// notice says why). The host answers EvWait when another block holds
	// the session for more than a second (its Message names the client
	// whose block runs), EvStarted when the block goes to the interpreter
	// (a client that loses a host before EvStarted may send the block
	// again), EvNote (Kind NoteRestart then NoteRepair) before the block's
	// output, EvOut events (Stream StreamStdout or StreamStderr) while it
	// runs, and one EvResult. After its run request a client may send one
	// more line, OpCancel; a client that disconnects does what a cancel
	// does: its waiting block is withdrawn, its running one interrupted.
	//
	// To the child: Code, Echo. The child answers EvNote (the restart
	// notice, once), EvRunning as the block starts (from then on SIGINT
	// interrupts it; the host holds back an interrupt that comes earlier
	// until it reads EvRunning), EvOut events, then EvResult whose Syntax
	// is set when Python refused the block as it stands: the block did not
	// run, and the host repairs it (asking OpCompile) and sends it again or
	// reports the error. The host adds the attachments the block stored
	// meanwhile (its host calls) to the result. The result's Written lists
	// the checked files (sandbox/check) the session's code opened for
	// writing or renamed onto since the last block, which the host then
	// checks. The result goes out before the snapshot is saved (its
	// Snapshot is "saving"): the child answers OpCompile meanwhile, and the
	// host sends OpSave once the block's client has its result.
	OpRun Op = "run"
	// OpCancel, {"op": "cancel"} after a run request: a block not started
	// yet is withdrawn (it never runs; its EvResult is the
	// KeyboardInterrupt of a block interrupted before it started), a
	// started one gets SIGINT as with OpInterrupt, but only while it is
	// still the running block, so a cancel never interrupts another
	// client's block. Client names the sender (see OpInterrupt).
	OpCancel Op = "cancel"
	// OpDefs: Name, Pattern, Limit, Offset, Details, JSON; answers EvDefs,
	// the listing as Data (text, or the JSON of the session's describe()
	// when JSON is set). The child answers it as the host does.
	OpDefs Op = "defs"
	// OpIsComplete: Code; answers EvIsComplete with Kind "complete",
	// "incomplete" (codeop's rules, as python's REPL decides whether Enter
	// runs the input or continues it) or "invalid". The child answers it
	// as the host does.
	OpIsComplete Op = "is_complete"
	// OpCompletions: Code, the word before a cursor; answers EvCompletions
	// with the names completing it (rlcompleter's rules), one per line in
	// Data. The child answers it as the host does.
	OpCompletions Op = "completions"
	// OpStatus answers EvStatus with the host's Status.
	OpStatus Op = "status"
	// OpInterrupt interrupts the caller's block holding the session, else
	// the caller's oldest one waiting for it (a block interrupted before
	// its child started it does not run: its result is a
	// KeyboardInterrupt error); the caller's blocks are those of the same
	// Client (Client.Owns), every block with Any or without Client.
	// Answers EvOK whose Message says whose block was stopped, or EvError
	// naming the client whose block runs when none of the caller's does.
	OpInterrupt Op = "interrupt"
	// OpEvict: another session's host frees memory: the child is
	// snapshotted and stopped unless a block runs; EvOK or EvError.
	OpEvict Op = "evict"
	// OpStop (Force: also while a block runs): the child is snapshotted
	// and stopped, and the host ends. EvOK, or EvError when a block runs
	// and Force is not set.
	OpStop Op = "stop"
	// OpRestart (Force: also while a block runs): the child is
	// snapshotted and stopped. EvOK, or EvError when a block runs and
	// Force is not set. A restart with Fresh (the snapshot is discarded;
	// the old child is killed, not saved) or Drop (names left out of the
	// snapshot) starts the new child at once, so that the snapshot holds
	// what was asked for before EvOK.
	OpRestart Op = "restart"
	// OpFollow: Client; the live view of the session's blocks. The host
	// answers EvOK, then, until the client closes the connection, pushes
	// the blocks other clients run (not the ones of the same Client ID):
	// EvBlock (Kind BlockStart, Data the code, Client whose block it is)
	// as the block gets the session's turn (a follower that comes while a
	// block runs gets its EvBlock start at once), its EvNote and EvOut
	// events as they come, and EvBlock (Kind BlockEnd, Result) after it. A
	// follower that falls behind by more than a MiB loses output, and an
	// EvOut event on StreamStderr says how much.
	OpFollow Op = "follow"
	// OpJournal answers EvOK once every block that finished is in the
	// session's journal (sandbox/journal), which the host writes after the
	// block's result, and the snapshot after the last block is saved; the
	// client then reads the files (the log, an export).
	OpJournal Op = "journal"
	// OpRewind (To a block, or Back N from the current state's; neither:
	// 1): the session's state becomes the one after that block, from its
	// history: the host asks the child where (OpHistory), stops it
	// (saving), starts the next one on that snapshot and answers EvOK with
	// the "[Sandbox rewound]" notice as Message and History; EvError when
	// a block runs or the history holds no such block.
	OpRewind Op = "rewind"
)

// Through `vis-agent sandbox connect` (another machine): a client on
// another machine runs `vis-agent sandbox connect` there (over ssh,
// kubectl exec, docker exec) and writes the same requests to its standard
// input, without the key line: connect is a client of that machine,
// presenting the key itself. It reads the first request, refuses another
// Version in one EvError naming both, and passes the request (a run's
// Policy replaced by the one its own flags and its user's settings give,
// when the request names one) and what follows to the host, the host's
// events back, unchanged. A session connect does not start (--no-start)
// that has no host answers EvError with Kind KindNotRunning.

// Requests `vis-agent sandbox connect` answers itself, from that machine's
// store, with no host.
const (
	// OpList: Data, the JSON of `vis-agent sandbox list --json`'s rows.
	OpList Op = "list"
	// OpAttachments: Data, the JSON list of descriptors (Limit: how many
	// of the newest commentable versions carry their comments).
	OpAttachments Op = "attachments"
	// OpAttachment: Name (id or filename), AttachmentVersion; Data, the
	// descriptor as JSON.
	OpAttachment Op = "attachment"
	// OpAttachmentRead: Name, an attachment id; EvData events (Data,
	// base64 chunks of the bytes), then EvOK.
	OpAttachmentRead Op = "attachment_read"
	// OpComment: Name, AttachmentVersion, Code the text; Data, the
	// comment.
	OpComment Op = "comment"
	// OpRemove: Force; the session is deleted there; EvOK.
	OpRemove Op = "rm"
)

// EvData is an event carrying a chunk of bytes (base64 in Data).
const EvData Ev = "data"

// KindNotRunning is the Kind of the EvError of a session without a host,
// for a request that does not start one.
const KindNotRunning = "not_running"

// Events of the host to a client (each op says which it answers). The
// child sends EvNote, EvOut, EvResult, EvDefs, EvIsComplete,
// EvCompletions, EvOK and EvError to the host too; its own events are in
// child.go.
const (
	EvWait        Ev = "wait"    // another client's block holds the session (OpRun)
	EvStarted     Ev = "started" // the block went to the interpreter (OpRun)
	EvNote        Ev = "note"    // a notice before the block's output: Kind NoteRestart or NoteRepair
	EvOut         Ev = "out"     // output: Stream StreamStdout or StreamStderr, at most OutChunk
	EvResult      Ev = "result"  // how a block ended (Result)
	EvDefs        Ev = "defs"
	EvIsComplete  Ev = "is_complete"
	EvCompletions Ev = "completions"
	EvStatus      Ev = "status"
	EvOK          Ev = "ok"
	EvError       Ev = "error" // the request failed: Message says why
	EvBlock       Ev = "block" // OpFollow: another client's block starts or ends
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
