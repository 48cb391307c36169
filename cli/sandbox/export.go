package sandbox

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// ExportOptions are `sandbox export`'s flags, and the version its
// manifest names.
type ExportOptions struct {
	Session cmdutil.SessionFlags
	// Output is -o: the archive to write, "-" for standard output, ""
	// for SESSION.vis-session.zip here.
	Output  string
	Force   bool
	Version string
}

// NewCmdExport is `sandbox export`; runF (nil: runExport) runs it.
func NewCmdExport(f *cmdutil.Factory, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{Session: cmdutil.SessionFlags{Streams: f.Streams, Local: true}, Version: f.Version}
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
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runExport(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "the archive to write (- for standard output)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing file")
	return cmd
}

func runExport(opts *ExportOptions) error {
	s := opts.Session.Streams
	c, err := opts.Session.Settled()
	if err != nil {
		return err
	}
	lim := transferLimits(s)
	export := func(w io.Writer) error { return c.Export(w, s.Layout().Attachments(), opts.Version, lim) }
	if opts.Output == "-" {
		return export(s.Out)
	}
	dest := opts.Output
	if dest == "" {
		dest = c.Meta.Name + ".vis-session.zip"
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(export(pw)) }()
	wrote, size, err := writeOut(s, dest, pr, opts.Force)
	pr.CloseWithError(err)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Err, "vis-agent: wrote %s (session %s, %s)\n", termtext.Line(wrote), termtext.Line(c.Meta.Name), sizeText(size))
	return nil
}

// transferLimits are the user's limits on what an archive holds.
func transferLimits(s cmdutil.Streams) client.TransferLimits {
	st := config.Load(s.Layout().UserConfig())
	return client.TransferLimits{
		// The snapshot file itself holds up to 4 MiB of small values
		// and its header besides the budget of the spilled ones.
		StateBytes:      int64(st.SandboxMaxSnapshotMB.Value)<<20 + 64<<20,
		AttachmentBytes: int64(st.SandboxMaxAttachmentMB.Value) << 20,
		AttachmentsSum:  int64(st.SandboxMaxAttachmentsMB.Value) << 20,
	}
}
