package sandbox

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// ListOptions are `sandbox list`'s flags.
type ListOptions struct {
	Streams cmdutil.Streams
	JSON    bool
	Host    string
}

// NewCmdList is `sandbox list`; runF (nil: runList) runs it.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Streams: f.Streams}
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the sandbox sessions",
		Long: `List the sandbox sessions: state, host and child processes, idle time,
snapshot size ("≥ N B" when the walk of the session's folder stopped at
its bounds, 100000 entries, 32 folders deep or 2 s: the session's code
writes there; --json: snapshot_at_least true), NAMES, how many names the
snapshot brings back after a
restart (helpers, classes, imports and variables; both as last saved: the
save after a block ends a moment after its answer), and the jail and network
in force (on, off, or allow: each allow list is under the table, with the
sessions it holds for).`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runList(opts)
		}),
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the sessions as JSON")
	cmdutil.AddHostFlag(cmd, &opts.Host)
	return cmd
}

func runList(opts *ListOptions) error {
	s := opts.Streams
	t, err := cmdutil.HostTarget(s, opts.Host)
	if err != nil {
		return err
	}
	var rows []protocol.ListRow
	if t != nil {
		rows, err = client.ListRemote(*t, cmdutil.MuxConfig(s))
	} else {
		rows, err = client.List(s.Layout().Sessions())
	}
	if err != nil {
		return err
	}
	w := s.Out
	if opts.JSON {
		return printJSON(w, rows, "  ")
	}
	// The rows of --host are a remote peer's to say: every
	// string one line of text.
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATE\tHOST\tCHILD\tIDLE\tSNAPSHOT\tNAMES\tJAIL\tNETWORK\tWORKSPACE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", termtext.Line(r.Name), termtext.Line(r.State), pidText(r.HostPID), pidText(r.ChildPID),
			idleText(r), snapshotText(r), r.SavedNames, onOffText(r.Jail), networkText(r), termtext.Line(r.Workspace))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Each allow list, and what this machine lacks, once each,
	// with the sessions it concerns.
	var notes []string
	concerns := map[string][]string{}
	note := func(text, session string) {
		if concerns[text] == nil {
			notes = append(notes, text)
		}
		concerns[text] = append(concerns[text], session)
	}
	var (
		confine error
		probed  bool
	)
	for _, r := range rows {
		if r.Hosts != nil {
			note("network "+protocol.Policy{Network: true, Hosts: r.Hosts}.NetworkText(), r.Name)
		}
		if r.KernelMissing != "" {
			note("the kernel layer lacks: "+r.KernelMissing, r.Name)
		}
		if r.ForkOf != "" {
			note("forked from "+r.ForkOf, r.Name)
		}
		// Its shell() runs commands under bubblewrap, or refuses.
		if t == nil && r.State == "running" && r.Jail != nil && *r.Jail {
			if !probed {
				confine, probed = tools.CanConfine(), true
			}
			if confine != nil {
				note(confine.Error(), r.Name)
			}
		}
	}
	for _, n := range notes {
		fmt.Fprintf(w, "%s (%s)\n", termtext.Line(n), termtext.Line(strings.Join(concerns[n], ", ")))
	}
	return nil
}

// networkText is NETWORK's column: on, off, or allow (the allow list).
func networkText(r protocol.ListRow) string {
	if r.Hosts != nil {
		return "allow"
	}
	return onOffText(r.Network)
}

func onOffText(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "on"
	}
	return "off"
}

func pidText(pid int) string {
	if pid <= 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// snapshotText is the size of a session's snapshot, "≥ N B" when the walk
// of its folder stopped at its bounds.
func snapshotText(r protocol.ListRow) string {
	if r.SnapshotAtLeast {
		return fmt.Sprintf("≥ %d B", r.SnapshotBytes)
	}
	return fmt.Sprintf("%d B", r.SnapshotBytes)
}

func idleText(r protocol.ListRow) string {
	if r.State != "running" {
		return "-"
	}
	return fmt.Sprintf("%ds", r.IdleSeconds)
}
