package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
	"github.com/vis-agent/vis-agent/sandbox/transfer"
)

// transferLimits are the user's limits on what an archive holds.
func transferLimits(s Streams) transfer.Limits {
	st := config.Load(s.Layout().UserConfig())
	return transfer.Limits{
		// The snapshot file itself holds up to 4 MiB of small values
		// and its header besides the budget of the spilled ones.
		StateBytes:      int64(st.SandboxMaxSnapshotMB.Value)<<20 + 64<<20,
		AttachmentBytes: int64(st.SandboxMaxAttachmentMB.Value) << 20,
		AttachmentsSum:  int64(st.SandboxMaxAttachmentsMB.Value) << 20,
	}
}

func newSandboxExportCmd(s Streams) *cobra.Command {
	var (
		sf    = sessionFlags{s: s, local: true}
		out   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "export [--session S] [--workspace D] [-o FILE|-] [--force]",
		Short: "Write a session (snapshot, spill files, attachments and comments) to one archive",
		Long: `Write the session's last snapshot, its spill files and block counter, and
every version of its attachments with their comments to one zip archive
with a manifest (versions, sizes, SHA-256s), for vis-agent sandbox import
on any machine. The workspace's files are not in it (they are yours), nor
the packages install() put in the session. A running session is exported
as its last block left it. Default FILE: SESSION.vis-session.zip here,
never overwritten without --force; -o - writes to standard output.`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := sf.settled()
			if err != nil {
				return err
			}
			lim := transferLimits(s)
			src := transfer.Source{Folder: c.Folder, Meta: c.Meta, Attachments: s.Layout().Attachments(), VisAgent: buildVersion(),
				Protocol: protocol.Version, MaxStateBytes: lim.StateBytes}
			if out == "-" {
				return transfer.Export(src, s.Out)
			}
			dest := out
			if dest == "" {
				dest = c.Meta.Name + ".vis-session.zip"
			}
			pr, pw := io.Pipe()
			go func() { pw.CloseWithError(transfer.Export(src, pw)) }()
			wrote, size, err := writeOut(s, dest, pr, force)
			pr.CloseWithError(err)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Err, "vis-agent: wrote %s (session %s, %s)\n", termtext.Line(wrote), termtext.Line(c.Meta.Name), sizeText(size))
			return nil
		}),
	}
	sf.add(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the archive to write (- for standard output)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return cmd
}

func newSandboxImportCmd(s Streams) *cobra.Command {
	sf := sessionFlags{s: s, local: true}
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
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("session") {
				sf.name = session.DefaultName // only to resolve the workspace
			}
			m, err := sf.meta()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("session") {
				m.Name = "" // the archive's
			}
			archive, err := openNamed(s, args[0])
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("no archive %s", args[0])
			}
			if err != nil {
				return err
			}
			defer archive.Close()
			l := s.Layout()
			man, got, err := transfer.Import(archive.f, args[0], transfer.Target{Sessions: l.Sessions(), Meta: m, Attachments: l.Attachments(), Limits: transferLimits(s)})
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Err, "vis-agent: imported session %s (workspace %s) from %s: %d files, %d attachment versions; its next block restores the snapshot\n",
				termtext.Line(got.Name), termtext.Line(got.Workspace), termtext.Line(args[0]), len(man.Files), len(man.Attachments))
			return nil
		}),
	}
	sf.add(cmd)
	// The archive's name is the default, not the flag's own value.
	session := cmd.Flags().Lookup("session")
	session.Usage, session.DefValue = "the new session's name (default: the archive's)", ""
	return cmd
}
