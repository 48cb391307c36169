package protocol

// ListRow is one session of `vis-agent sandbox list`: a row of its table,
// an element of its --json, and of a --host machine's answer to OpList.
type ListRow struct {
	Name          string `json:"name"`
	Workspace     string `json:"workspace"`
	State         string `json:"state"`
	HostPID       int    `json:"host_pid"`
	ChildPID      int    `json:"child_pid"`
	IdleSeconds   int64  `json:"idle_seconds"`
	SnapshotBytes int64  `json:"snapshot_bytes"`
	// SnapshotAtLeast: the walk of the session's folder stopped at its
	// bounds (entries, depth, time; the session's code writes there), so
	// SnapshotBytes is what it counted, a lower bound.
	SnapshotAtLeast bool `json:"snapshot_at_least,omitempty"`
	SavedNames      int  `json:"saved_names"`
	// Jail and Network are the policy its child runs (or last ran) under;
	// null when its host never said.
	Jail    *bool `json:"jail"`
	Network *bool `json:"network"`
	// Hosts is the allow list when the network is one.
	Hosts *Hosts `json:"hosts,omitempty"`
	// KernelMissing: what the running child's kernel layer could not
	// enforce.
	KernelMissing string `json:"kernel_missing"`
	// ForkOf: the session it was forked from (and at which block).
	ForkOf string `json:"fork_of,omitempty"`
}
