package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// Dynamic completion (cobra's __complete, which the scripts of `vis-agent
// completion` call): --session offers the sessions of the workspace the
// command line names (or the current folder), and `attachment get|comment`
// the session's attachments by filename and id. A completion that cannot
// read the sessions offers nothing rather than an error.

// CompleteSessions lists the names of the sessions of sf's workspace.
func (sf *SessionFlags) CompleteSessions(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	ws, err := sf.WorkspaceDir()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	metas, _ := client.Metas(sf.Streams.Layout().Sessions())
	var names []string
	for _, m := range metas {
		if m.Workspace == ws && strings.HasPrefix(m.Name, prefix) {
			names = append(names, m.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// CompleteAttachments offers, as the first argument, the filenames of the
// session's attachments and the ids of their versions (newest first), each
// with a short description.
func (sf *SessionFlags) CompleteAttachments(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := sf.Existing()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	all, err := c.Attachments()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	seen := map[string]bool{}
	// The shell shows what it is offered: a filename holding what a
	// terminal would obey (or a tab, which ends a candidate) is offered by
	// its versions' ids only, and named as text.
	for _, d := range all {
		if !seen[d.Filename] && strings.HasPrefix(d.Filename, prefix) && termtext.Line(d.Filename) == d.Filename {
			seen[d.Filename] = true
			out = append(out, fmt.Sprintf("%s\tlatest of %d version(s)", d.Filename, d.Version))
		}
	}
	for _, d := range all {
		if strings.HasPrefix(d.ID, prefix) && termtext.Line(d.ID) == d.ID {
			out = append(out, fmt.Sprintf("%s\t%s v%d", d.ID, termtext.Line(d.Filename), d.Version))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
