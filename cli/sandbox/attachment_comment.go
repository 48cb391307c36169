package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
)

// AttachmentCommentOptions are `sandbox attachment comment`'s flag and
// arguments.
type AttachmentCommentOptions struct {
	Session cmdutil.SessionFlags
	// Attachment is the ID or FILENAME, Text the comment.
	Attachment, Text string
	Version          int
}

// NewCmdAttachmentComment is `sandbox attachment comment`; runF (nil:
// runAttachmentComment) runs it.
func NewCmdAttachmentComment(f *cmdutil.Factory, runF func(*AttachmentCommentOptions) error) *cobra.Command {
	opts := &AttachmentCommentOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "comment ID|FILENAME --version N TEXT",
		Short: "Comment on a commentable version of an attachment",
		Long: `Add TEXT as a comment, signed with your user name, to version N of an
attachment (a negative N counts back: -1 is the latest). Only versions
attached with commentable=True take comments; a read-only one refuses,
saying so. get_attachment() in the session shows the comments.`,
		Args:              exactArgs(2, "give the attachment's ID or FILENAME, then the comment's TEXT"),
		ValidArgsFunction: opts.Session.CompleteAttachments,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("version") {
				return cmdutil.UsageError{Err: errors.New("comment needs --version N (a negative N counts back: -1 is the latest)")}
			}
			if strings.TrimSpace(args[1]) == "" {
				return cmdutil.UsageError{Err: errors.New("the comment's TEXT is empty")}
			}
			opts.Attachment, opts.Text = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return runAttachmentComment(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().IntVar(&opts.Version, "version", 0, "the version to comment on (negative: counting back)")
	return cmd
}

func runAttachmentComment(opts *AttachmentCommentOptions) error {
	s := opts.Session.Streams
	c, d, err := findAttachment(&opts.Session, opts.Attachment, opts.Version)
	if err != nil {
		return err
	}
	cm, err := c.CommentAttachment(d.ID, 0, opts.Text)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "comment %d added to %s version %d\n", cm.ID, termtext.Line(d.Filename), d.Version)
	return nil
}
