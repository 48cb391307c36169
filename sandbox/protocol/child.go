package protocol

// The child's link: the host and its interpreter child, over a socketpair
// the child inherits as LinkFD.
//
// The host first sends the child one line, the session's description
// (ChildInfo: name, workspace, why the previous child stopped, the jail
// policy), and nothing more until the child is ready: the child reads it
// before its jail, unbuffered, and hands the link to the driver. (The
// host's first child may have started before the host knew the session.)
// The child then restores the session's snapshot (after EvRestoring when
// there is one: a child that dies or hangs after it died restoring, and
// the host starts the next one with the snapshot discarded), keeping what
// the restore prints for the restart notice, and sends EvReady (Python's
// version in Data, the minor in Line, and in Message what its jail's
// kernel layer could not enforce, "" when nothing). The host then sends
// requests: OpRun, OpDefs, OpIsComplete and OpCompletions as a client
// does (client.go says what the child answers), and the child-only ones
// below.
//
// A standby child (ChildInfo.Standby) answers EvStandby instead of
// restoring: it imported ChildInfo.Preload and waits. The host swaps it in
// with one Wake line (OpWake), after which it restores and answers as above
// (EvRestoring, EvReady), or answers EvStale and exits when a file its
// imports loaded changed since.
//
// Threads a block started may go on printing after it: their EvOut events
// may come before the answer to any later request; the host passes them to
// the block that runs, or to its log between blocks.
//
// Interrupts are a real SIGINT to the child's process (KeyboardInterrupt at
// the next bytecode); a stuck child gets SIGUSR1 (faulthandler writes every
// thread's stack to StacksFD) and then SIGKILL. The child's own file
// descriptors 1 and 2 (output of C code and subprocesses) are a pipe the
// host forwards to the running block's client; it drains them before the
// block's result. What Python code writes to them with os.write goes over
// the link with print's output instead, in the order written; output of C
// code may still overtake printed text.

// Requests of the host to its child only.
const (
	// OpPing answers EvPong (the host asks before each block, so a child
	// killed a moment ago, or one that does not answer within 10 s, is
	// replaced before the block, not under it).
	OpPing Op = "ping"
	// OpCompile: Code; answers EvCompiled with Syntax nil when it
	// compiles. With File set, Code is a file's bytes, one per character
	// (FileCode), compiled as the module file File (no top-level await; a
	// byte order mark and a coding declaration read as Python reads
	// files): the check of the files a block changed.
	OpCompile Op = "compile"
	// OpSave: the child saves the snapshot after the last block and
	// answers EvSaved, whose Result holds Snapshot, Saved and Preload. Any
	// other request finds that save done first.
	OpSave Op = "save"
	// OpHistory asks which block a rewind (To, Back) goes to: EvHistory
	// with History, or EvError saying why no block fits.
	OpHistory Op = "history"
	// OpRewindHere (To, Reason): the child rewinds to block To in its own
	// process when it still holds that block's values (sandbox rewind, in
	// place): EvOK with the "[Sandbox rewound]" notice (Reason says why)
	// as Message; or EvOK of Kind KindRestart, Message saying why not, its
	// state unchanged: the host then restarts it on the block's snapshot.
	OpRewindHere Op = "rewind_here"
	// OpNotice answers EvOK with the restart notice the next block would
	// start with (Message), which it then no longer shows.
	OpNotice Op = "notice"
	// OpExit: the child saves its snapshot and exits; with Force (a
	// rewind's) the save checks only the values its blocks named.
	OpExit Op = "exit"
	// OpWake swaps a standby child in: the request is a Wake line.
	OpWake Op = "restore"
)

// KindRestart is the Kind of the child's EvOK to OpRewindHere when the
// rewind needs a new process.
const KindRestart = "restart"

// Events of the child to its host only.
const (
	EvRestoring Ev = "restoring" // the snapshot's restore begins
	EvReady     Ev = "ready"     // the child serves requests
	EvRunning   Ev = "running"   // the block starts: SIGINT interrupts it from now on
	EvPong      Ev = "pong"
	EvCompiled  Ev = "compiled"
	EvSaved     Ev = "saved"
	EvHistory   Ev = "history"
	// A standby child's: it is waiting; its imports changed on disk.
	EvStandby Ev = "standby"
	EvStale   Ev = "stale"
)

// ChildInfo is the first line the host sends its child: what the driver
// is told about its session at start.
type ChildInfo struct {
	Session       SessionInfo `json:"session"`
	RestartReason string      `json:"restart_reason,omitempty"`
	// Policy is the jail the child applies to itself before any user code.
	Policy Policy `json:"policy"`
	// Discard, when set, says why the child starts empty: it deletes the
	// snapshot instead of restoring it (restart --fresh, or a previous
	// child that died restoring it).
	Discard string `json:"discard,omitempty"`
	// Drop are names the child leaves out of the restore, and so out of
	// the snapshot it saves at once (restart --drop).
	Drop []string `json:"drop,omitempty"`
	// Rewind is the block whose snapshot in the session's history the
	// child restores in place of the last one (sandbox rewind).
	Rewind int `json:"rewind,omitempty"`
	// Settings are the user's settings the driver applies; the child
	// fills them in from the user's config before its jail.
	Settings DriverSettings `json:"settings"`
	// Packages is the session's own package folder (install()), which the
	// child adds after the host's description: the driver puts it on
	// sys.path after the environment's site-packages.
	Packages string `json:"packages,omitempty"`
	// Standby makes the child a warm standby: once jailed, it imports the
	// top-level modules in Preload (those found outside the workspace),
	// answers "standby", and waits for a Wake before it reads the snapshot.
	Standby bool     `json:"standby,omitempty"`
	Preload []string `json:"preload,omitempty"`
}

// Wake is the request that swaps a standby in: it then restores the
// snapshot as a child started with these fields in its ChildInfo would. A
// standby whose imported modules' files changed since it imported them
// answers "stale" and exits instead.
type Wake struct {
	V             int      `json:"v"`
	Op            Op       `json:"op"` // OpWake
	RestartReason string   `json:"restart_reason,omitempty"`
	Discard       string   `json:"discard,omitempty"`
	Drop          []string `json:"drop,omitempty"`
	Rewind        int      `json:"rewind,omitempty"`
}

// DriverSettings are the session settings the driver applies (0 or unset:
// the driver's defaults; HistoryBlocks -1: no history).
type DriverSettings struct {
	MaxValueMB    int  `json:"max_value_mb,omitempty"`
	MaxSnapshotMB int  `json:"max_snapshot_mb,omitempty"`
	HistoryBlocks int  `json:"history_blocks,omitempty"`
	AttachFigures bool `json:"attach_figures"`
}

// SessionInfo becomes the session's read-only `session` name.
type SessionInfo struct {
	Name      string `json:"name"`
	Workspace string `json:"workspace"`
	Python    string `json:"python,omitempty"` // the driver fills it in
	Access    Access `json:"access"`
}

// Access says what the session's code may reach: what is in force, which
// the child fills in once its jail is applied.
type Access struct {
	IsJailed bool `json:"is_jailed"`
	Network  bool `json:"network"`
	// Hosts is the allow list when the network is one (the child then
	// reaches only the host's proxy, at Proxy); nil otherwise.
	Hosts         *Hosts   `json:"hosts"`
	Proxy         string   `json:"proxy,omitempty"`
	Roots         []string `json:"roots"`           // read and write
	ReadOnlyRoots []string `json:"read_only_roots"` // read only
	MaxThreads    int      `json:"max_threads"`     // 0: no cap
	// ThreadCap: the cap is enforced (CPython 3.12+ raises the event).
	ThreadCap bool `json:"thread_cap"`
	MemoryMB  int  `json:"memory_mb"` // 0: no cap
	// Kernel is the kernel layer in force (KernelStatus), with what the
	// kernel could not enforce.
	Kernel *KernelStatus `json:"kernel"`
	// Host is what the session's host holds to, which its host fills in.
	Host *HostLimits `json:"host"`
}

// HostLimits are the bounds the session's host keeps, whatever the
// session's code does.
type HostLimits struct {
	// Socket says who may use the session through its socket.
	Socket string `json:"socket"`
	// MaxCalls is how many host calls may be under way at once; each
	// ends with its block.
	MaxCalls int `json:"max_calls"`
	// MaxAttachmentMB bounds one attachment, MaxAttachmentsMB the
	// session's together.
	MaxAttachmentMB  int `json:"max_attachment_mb"`
	MaxAttachmentsMB int `json:"max_attachments_mb"`
	// ReadMB is how much of one file cat and grep read; GrepRows the
	// rows one grep answers; PatchMB the largest file patch edits.
	ReadMB   int `json:"read_mb"`
	GrepRows int `json:"grep_rows"`
	PatchMB  int `json:"patch_mb"`
}

// NoNetworkNamespace is what a child under an allow list sends its host
// on the host-call link in place of its proxy's listener when it could
// make no network namespace (it then runs without the network).
const NoNetworkNamespace = 'N'

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
