package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// ForkOptions are `sandbox fork`'s arguments and flags.
type ForkOptions struct {
	Session cmdutil.SessionFlags
	New     string // the fork's name
	At      int    // the block whose state it starts from (0: the last)
	// NewWorkspace is the fork's own workspace ("": the session's);
	// CopyWorkspace fills it with the session workspace's files.
	NewWorkspace  string
	CopyWorkspace bool
}

// NewCmdFork is `sandbox fork`; runF (nil: runFork) runs it.
func NewCmdFork(f *cmdutil.Factory, runF func(*ForkOptions) error) *cobra.Command {
	opts := &ForkOptions{Session: cmdutil.SessionFlags{Streams: f.Streams, Local: true}}
	cmd := &cobra.Command{
		Use:   "fork NEW [--at BLOCK] [--new-workspace DIR [--copy-workspace]]",
		Short: "Make a new session that starts from a session's state, to try something in the copy",
		Long: `Make session NEW, in the same workspace, from a copy of the session's
state: its last snapshot, or with --at BLOCK the one its history keeps
after that block (sandbox defs names them). Its first block restores it,
with a notice saying where it came from; its blocks number on from the
source's. The two then go their own ways: what one does to its state the
other does not see. Files are shared: the workspace is the same. Not
copied: the journal, the history, the attachments. sandbox list says where
a fork came from.

--new-workspace DIR gives the fork another workspace (made when it does not
exist; not the session's workspace or inside it), used as it is: a git
worktree of the same project, say. With --copy-workspace the workspace's
files are copied there first (DIR new or empty), within the session's disk
budget (sandbox.max_disk_mb: past it nothing is copied); symlinks are
copied as links, never followed, and what the session's jail does not show
it (vis-agent's own folder, files its process could not read by their
mode, sockets and devices) is left out.`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if err := client.CheckName(args[0]); err != nil {
				return cmdutil.UsageError{Err: err}
			}
			if cmd.Flags().Changed("at") && opts.At < 1 {
				return cmdutil.UsageError{Err: errors.New("--at is a block's number, 1 or more (see vis-agent sandbox defs)")}
			}
			if opts.CopyWorkspace && opts.NewWorkspace == "" {
				return cmdutil.UsageError{Err: errors.New("--copy-workspace copies into the fork's own workspace: give --new-workspace DIR")}
			}
			opts.New = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runFork(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().IntVar(&opts.At, "at", 0, "the block whose state the fork starts from (default: the last)")
	cmd.Flags().StringVar(&opts.NewWorkspace, "new-workspace", "", "the fork's own workspace folder (default: the session's)")
	cmd.Flags().BoolVar(&opts.CopyWorkspace, "copy-workspace", false, "copy the workspace's files into --new-workspace")
	return cmd
}

func runFork(opts *ForkOptions) error {
	s := opts.Session.Streams
	c, err := opts.Session.Settled()
	if err != nil {
		return err
	}
	m := client.Meta{Name: opts.New, Workspace: c.Meta.Workspace}
	var ws *client.NewWorkspace
	if opts.NewWorkspace != "" {
		if ws, err = forkWorkspace(s, c, opts.NewWorkspace, opts.CopyWorkspace); err != nil {
			return err
		}
		defer ws.Discard()
		m.Workspace = ws.Path
	}
	if err := forkSession(s, c, opts.At, m); err != nil {
		return err
	}
	if ws != nil {
		if err := ws.Commit(); err != nil {
			// The fork is unusable without its workspace.
			if fork, ferr := client.Existing(s.Layout().Sessions(), m); ferr == nil {
				_ = fork.Remove(false)
			}
			return err
		}
	}
	where := "its last block"
	if opts.At > 0 {
		where = fmt.Sprintf("block %d", opts.At)
	}
	fmt.Fprintf(s.Out, "Forked session %s from %s after %s; its first block restores that state.\n",
		termtext.Line(opts.New), termtext.Line(c.Meta.Name), where)
	if ws != nil {
		copied := "no files copied"
		if opts.CopyWorkspace {
			copied = fmt.Sprintf("%d files (%.1f MiB) copied, %d entries left out", ws.Files, float64(ws.Bytes)/(1<<20), ws.Left)
		}
		fmt.Fprintf(s.Out, "Its workspace is %s (%s).\n", termtext.Line(ws.Path), copied)
	}
	return nil
}

// forkWorkspace checks (and with copy, fills) dir as the workspace of a
// fork of c.
func forkWorkspace(s cmdutil.Streams, c *client.Session, dir string, copy bool) (*client.NewWorkspace, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.Dir, dir)
	}
	// The jail covers vis-agent's sandbox folder: a workspace holding it
	// shows the session none of it.
	budget := int64(config.Load(s.Layout().UserConfig()).SandboxMaxDiskMB.Value) << 20
	return c.ForkWorkspace(dir, copy, budget, []string{s.Layout().Sandbox()})
}

// forkSession makes session m from the state of c (settled) after block
// at (0: its last).
func forkSession(s cmdutil.Streams, c *client.Session, at int, m client.Meta) error {
	return c.Fork(at, s.Layout().Sessions(), m, transferLimits(s))
}

// mcpFork is the MCP server's fork_session: a fork of src in its
// workspace, opened as sf and jf open the server's own session.
func mcpFork(sf cmdutil.SessionFlags, jf *cmdutil.JailFlags) func(src *client.Session, name string, at int) (*client.Session, error) {
	return func(src *client.Session, name string, at int) (*client.Session, error) {
		if err := src.Settle(); err != nil {
			return nil, err
		}
		if err := forkSession(sf.Streams, src, at, client.Meta{Name: name, Workspace: src.Meta.Workspace}); err != nil {
			return nil, err
		}
		fork := sf
		fork.Name, fork.Workspace = name, src.Meta.Workspace
		c, _, err := fork.Open(jf)
		return c, err
	}
}
