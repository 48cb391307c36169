package sandbox

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// NewCmdAttachment is `sandbox attachment` and its subcommands.
func NewCmdAttachment(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attachment get|comment",
		Short: "Write out or comment on one of a session's attachments",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdutil.UsageError{Err: fmt.Errorf("unknown command %q for %q: use get or comment", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(NewCmdAttachmentGet(f, nil), NewCmdAttachmentComment(f, nil))
	return cmd
}

// AttachmentGetOptions are `sandbox attachment get`'s flags and
// argument.
type AttachmentGetOptions struct {
	Session cmdutil.SessionFlags
	// Attachment is the ID or FILENAME.
	Attachment string
	Version    int
	Output     string
	Force      bool
}

// NewCmdAttachmentGet is `sandbox attachment get`; runF (nil:
// runAttachmentGet) runs it.
func NewCmdAttachmentGet(f *cmdutil.Factory, runF func(*AttachmentGetOptions) error) *cobra.Command {
	opts := &AttachmentGetOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "get ID|FILENAME [--version N] [-o FILE|-] [--force]",
		Short: "Write an attachment's bytes to a file or standard output",
		Long: `Write one version of an attachment (default: the latest; --version N that
one, a negative N counting back: -2 is the one before the latest) to its
filename in the current folder, which is never overwritten without
--force; -o FILE writes to FILE (into it, when FILE is a folder), -o - to
standard output. A filename the block chose that is hidden (a leading
dot), holds a control or bidirectional character, or names a path is
written only to a FILE you give with -o. A symbolic link is never
followed: one at the destination (a session may have left it there to
send the file elsewhere) is refused, as is a path through one in the
current folder; the "wrote" line names where the file went.`,
		Args:              exactArgs(1, "give the attachment's ID or FILENAME"),
		ValidArgsFunction: opts.Session.CompleteAttachments,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			opts.Attachment = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runAttachmentGet(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().IntVar(&opts.Version, "version", 0, "the version (default: the latest; negative: counting back)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "the file to write (- for standard output)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing file")
	return cmd
}

func runAttachmentGet(opts *AttachmentGetOptions) error {
	s := opts.Session.Streams
	c, d, err := findAttachment(&opts.Session, opts.Attachment, opts.Version)
	if err != nil {
		return err
	}
	r, err := c.ReadAttachment(d)
	if err != nil {
		return err
	}
	defer r.Close()
	if opts.Output == "-" {
		// Bytes as they are for a program; shown as text on a
		// terminal, which must not obey them.
		w := terminalSafe(s.Out, s.OutTerminal)
		_, err := io.Copy(w, r)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	wrote, err := getTo(s, d, opts.Output, opts.Force, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Err, "vis-agent: wrote %s (%s version %d, %s)\n", termtext.Line(wrote), termtext.Line(d.Filename), d.Version, sizeText(d.Size))
	return nil
}

// findAttachment is the session the flags name and the version of its
// attachment ref (an ID or a filename) that get and comment act on.
func findAttachment(sf *cmdutil.SessionFlags, ref string, version int) (*client.Session, client.Descriptor, error) {
	c, err := sf.Existing()
	if err != nil {
		return nil, client.Descriptor{}, err
	}
	d, err := c.Attachment(ref, version)
	return c, d, err
}

// getTo writes attachment d's bytes r to its filename in the working
// folder, to the file out names, or into the folder out names, and
// returns where they went.
func getTo(s cmdutil.Streams, d client.Descriptor, out string, force bool, r io.Reader) (string, error) {
	// Into a folder: the one -o names, else the working folder.
	folder := out
	if folder == "" {
		folder = "."
	}
	dir, err := fsutil.OpenFolder(s.Dir, folder)
	name, shown, overwrite := d.Filename, d.Filename, force
	switch {
	case err != nil && (out == "" || strings.HasSuffix(out, "/")):
		return "", fmt.Errorf("write %s: %w", folder, fsutil.Cause(err))
	case err != nil:
		// -o names the file (a symlink at it is refused by writeIn).
		if dir, name, err = fsutil.OpenParent(s.Dir, out); err != nil {
			return "", fmt.Errorf("write %s: %w", out, fsutil.Cause(err))
		}
		shown, overwrite = out, true
	default:
		if out != "" {
			shown = filepath.Join(out, d.Filename)
		}
		// A name the block chose: not a hidden file, a path or one
		// that shows as another (the store refuses paths; an old or
		// foreign row is checked again).
		if err := client.CheckWritableFilename(d.Filename); err != nil {
			dir.Close()
			return "", fmt.Errorf("%w: give -o FILE to write it under a name of your choice", err)
		}
	}
	defer dir.Close()
	wrote, _, err := writeIn(dir, name, shown, r, overwrite)
	return wrote, err
}
