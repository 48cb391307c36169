package protocol

import "encoding/json"

// Host calls: the session's functions (attach, shell, cat, ...) are Python
// in the child whose work the host does. They reach it over a second
// socketpair the child inherits as CallsFD, through one entry point, the
// built-in module _vis_host (sandbox/child/hostcall.c); the
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

// MaxCallHeader bounds a host call's header line.
const MaxCallHeader = 16 << 20

// CallRequest is the header of a host call.
type CallRequest struct {
	ID   uint64          `json:"id"`
	Size int64           `json:"size"`
	Op   Call            `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Call names a host call: what a block's Python asks its host to do
// (vis_sandbox's call(NAME, ...) in sandbox/child/py).
type Call string

// The host calls, with their args.
const (
	// CallSession: the session's description, again.
	CallSession Call = "session"
	// CallInstall, install(): packages by the host's uv; args specs and
	// base (the block's requirements and its environment's name==version
	// pins); answers the installed distributions (see sandbox/install).
	CallInstall Call = "install"
	// CallJournal, journal(): the session's earlier blocks.
	CallJournal Call = "journal"
	// CallAttach, attach(): a file or bytes into the store; args
	// filename, kind, media_type, commentable, block; the payload is the
	// bytes.
	CallAttach Call = "attach"
	// CallAttachments, attachments(): the session's list.
	CallAttachments Call = "attachments"
	// CallAttachment: one attachment's description; args ref, version.
	CallAttachment Call = "attachment"
	// CallAttachmentRead: args ref, version; the answer's payload is the
	// bytes.
	CallAttachmentRead Call = "attachment_read"
	// CallShellStart, shell(): a command, run by the host; args cmd,
	// timeout_ms, cwd, wait_ms.
	CallShellStart Call = "shell_start"
	// CallShellState: args id.
	CallShellState Call = "shell_state"
	// CallShellStop: args id.
	CallShellStop Call = "shell_stop"
	// CallShellWait: args id, max_ms.
	CallShellWait Call = "shell_wait"
	// CallShellLogs: args id, n.
	CallShellLogs Call = "shell_logs"
	// CallCat, cat(): a file's lines; args path, offset, limit.
	CallCat Call = "cat"
	// CallGrep, grep(): files' matching lines; args pattern, path, glob,
	// limit.
	CallGrep Call = "grep"
	// CallPatch, patch(): an edit, checked; args path, old, new, check,
	// compiled (see sandbox/host's patch op).
	CallPatch Call = "patch"
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
