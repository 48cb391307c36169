package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// ImportOptions are `sandbox import`'s flags and archive.
type ImportOptions struct {
	Session cmdutil.SessionFlags
	// SessionGiven: --session names the new session (else the archive
	// does).
	SessionGiven bool
	Archive      string
}

// NewCmdImport is `sandbox import`; runF (nil: runImport) runs it.
func NewCmdImport(f *cmdutil.Factory, runF func(*ImportOptions) error) *cobra.Command {
	opts := &ImportOptions{Session: cmdutil.SessionFlags{Streams: f.Streams, Local: true}}
	cmd := &cobra.Command{
		Use:   "import FILE [--session NEW] [--workspace D]",
		Short: "Restore a session from an archive of vis-agent sandbox export",
		Long: `Restore an archive of vis-agent sandbox export as a new session (--session,
default the archive's name) of a workspace of this machine (--workspace,
default the current folder): its next block restores the snapshot, with
the [Sandbox restarted] notice, and its attachments and comments are
there. An archive is checked whole before anything is written (only the
files an export writes, of the sizes and SHA-256s its manifest lists,
within sandbox.max_snapshot_mb and the attachment limits) and the session
appears whole or not at all; a damaged or truncated archive, or a snapshot
of another format, is refused in one line. The snapshot is only read by
the new session's jailed Python.`,
		Args: exactArgs(1, "give the archive to import"),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			opts.Archive = args[0]
			opts.SessionGiven = cmd.Flags().Changed("session")
			if runF != nil {
				return runF(opts)
			}
			return runImport(opts)
		}),
	}
	opts.Session.Add(cmd)
	// The archive's name is the default, not the flag's own value.
	name := cmd.Flags().Lookup("session")
	name.Usage, name.DefValue = "the new session's name (default: the archive's)", ""
	return cmd
}

func runImport(opts *ImportOptions) error {
	s := opts.Session.Streams
	sf := opts.Session
	if !opts.SessionGiven {
		sf.Name = client.DefaultName // only to resolve the workspace
	}
	m, err := sf.Meta()
	if err != nil {
		return err
	}
	if !opts.SessionGiven {
		m.Name = "" // the archive's
	}
	archive, err := openNamed(s, opts.Archive)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no archive %s", opts.Archive)
	}
	if err != nil {
		return err
	}
	defer archive.Close()
	l := s.Layout()
	man, got, err := client.Import(archive.f, opts.Archive, l.Sessions(), l.Attachments(), m, transferLimits(s))
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Err, "vis-agent: imported session %s (workspace %s) from %s: %d files, %d attachment versions; its next block restores the snapshot\n",
		termtext.Line(got.Name), termtext.Line(got.Workspace), termtext.Line(opts.Archive), len(man.Files), len(man.Attachments))
	return nil
}
