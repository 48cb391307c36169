package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
)

// The attachments commands read the store directly: they work with the
// session stopped, and never start its host.

func newSandboxAttachmentsCmd(s Streams) *cobra.Command {
	var (
		sf     = sessionFlags{s: s}
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "attachments [--session S] [--workspace D] [--json]",
		Short: "List a session's attachments, every version, newest first",
		Long: `List what the session attached with attach(): every version of every
filename, newest first, with its id, size, creation time and whether it
takes comments. --json prints the descriptors list_attachments() returns.`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := sf.existing()
			if err != nil {
				return err
			}
			list, err := c.Attachments()
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(s.Out, list, "  ")
			}
			if len(list) == 0 {
				fmt.Fprintf(s.Out, "session %q has no attachments\n", c.Meta.Name)
				return nil
			}
			// Every cell but the numbers is the session's (a remote
			// peer's with --host): one line of text each.
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tFILENAME\tVERSION\tKIND\tSIZE\tCREATED\tCOMMENTABLE")
			for _, d := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", termtext.Line(d.ID), termtext.Line(d.Filename), d.Version, termtext.Line(d.Kind), sizeText(d.Size),
					d.Created.Local().Format("2006-01-02 15:04:05"), yesNo(d.Commentable))
			}
			return tw.Flush()
		}),
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the descriptors as JSON")
	return cmd
}

func newSandboxAttachmentCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attachment get|comment",
		Short: "Write out or comment on one of a session's attachments",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q: use get or comment", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newAttachmentGetCmd(s), newAttachmentCommentCmd(s))
	return cmd
}

func newAttachmentGetCmd(s Streams) *cobra.Command {
	var (
		sf      = sessionFlags{s: s}
		version int
		out     string
		force   bool
	)
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
		ValidArgsFunction: sf.completeAttachments,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := sf.existing()
			if err != nil {
				return err
			}
			d, err := c.Attachment(args[0], version)
			if err != nil {
				return err
			}
			r, err := c.ReadAttachment(d)
			if err != nil {
				return err
			}
			defer r.Close()
			if out == "-" {
				// Bytes as they are for a program; shown as text on a
				// terminal, which must not obey them.
				w := terminalSafe(s.Out, s.OutTerminal)
				_, err := io.Copy(w, r)
				if ferr := w.Flush(); err == nil {
					err = ferr
				}
				return err
			}
			wrote, err := getTo(s, d, out, force, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Err, "vis-agent: wrote %s (%s version %d, %s)\n", termtext.Line(wrote), termtext.Line(d.Filename), d.Version, sizeText(d.Size))
			return nil
		}),
	}
	sf.add(cmd)
	cmd.Flags().IntVar(&version, "version", 0, "the version (default: the latest; negative: counting back)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (- for standard output)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return cmd
}

// getTo writes attachment d's bytes r to its filename in the working
// folder, to the file out names, or into the folder out names, and
// returns where they went.
func getTo(s Streams, d attachments.Descriptor, out string, force bool, r io.Reader) (string, error) {
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
		if err := attachments.CheckWritable(d.Filename); err != nil {
			dir.Close()
			return "", fmt.Errorf("%w: give -o FILE to write it under a name of your choice", err)
		}
	}
	defer dir.Close()
	wrote, _, err := writeIn(dir, name, shown, r, overwrite)
	return wrote, err
}

func newAttachmentCommentCmd(s Streams) *cobra.Command {
	var (
		sf      = sessionFlags{s: s}
		version int
	)
	cmd := &cobra.Command{
		Use:   "comment ID|FILENAME --version N TEXT",
		Short: "Comment on a commentable version of an attachment",
		Long: `Add TEXT as a comment, signed with your user name, to version N of an
attachment (a negative N counts back: -1 is the latest). Only versions
attached with commentable=True take comments; a read-only one refuses,
saying so. get_attachment() in the session shows the comments.`,
		Args:              exactArgs(2, "give the attachment's ID or FILENAME, then the comment's TEXT"),
		ValidArgsFunction: sf.completeAttachments,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("version") {
				return usageError{errors.New("comment needs --version N (a negative N counts back: -1 is the latest)")}
			}
			if strings.TrimSpace(args[1]) == "" {
				return usageError{errors.New("the comment's TEXT is empty")}
			}
			c, err := sf.existing()
			if err != nil {
				return err
			}
			d, err := c.Attachment(args[0], version)
			if err != nil {
				return err
			}
			cm, err := c.CommentAttachment(d.ID, 0, args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "comment %d added to %s version %d\n", cm.ID, termtext.Line(d.Filename), d.Version)
			return nil
		}),
	}
	sf.add(cmd)
	cmd.Flags().IntVar(&version, "version", 0, "the version to comment on (negative: counting back)")
	return cmd
}

// exactArgs is cobra.ExactArgs with a message saying what to give.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{errors.New(what)}
		}
		return nil
	}
}

// sizeText is a size as people read it: 512 B, 1.5 KiB, 3.0 MiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
