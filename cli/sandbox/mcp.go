package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/mcpserver"
)

// MCPOptions are `sandbox mcp`'s flags, and the version its server info
// names.
type MCPOptions struct {
	Session   cmdutil.SessionFlags
	Jail      cmdutil.JailFlags
	MaxOutput int
	NoEcho    bool
	Version   string
}

// NewCmdMCP is `sandbox mcp`; runF (nil: runMCP) runs it.
func NewCmdMCP(f *cmdutil.Factory, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}, Version: f.Version}
	cmd := &cobra.Command{
		Use:   "mcp [--session S] [--workspace D] [--network on|off|allow] [--no-jail] [flags]",
		Short: "Serve a persistent sandbox session to coding agents (MCP over stdio)",
		Long: `Serve one sandbox session over the Model Context Protocol on standard input and
output, for coding agents: the tools below, and the session's attachments as resources
(vis-attachment://SESSION/FILENAME). Standard output carries JSON-RPC only; the blocks run
in the session's own process. The server exits when its standard input closes; the session
keeps its snapshot.

Tools:
` + mcpTools() + `
Claude Code:  claude mcp add python-sandbox -- /path/to/vis-agent sandbox mcp
Codex:        [mcp_servers.python-sandbox] in ~/.codex/config.toml with
              command = "/path/to/vis-agent" and args = ["sandbox", "mcp"]`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if opts.MaxOutput <= 0 {
				return cmdutil.UsageError{Err: fmt.Errorf("invalid --max-output %d: it must be a positive number of characters", opts.MaxOutput)}
			}
			if runF != nil {
				return runF(opts)
			}
			return runMCP(opts)
		}),
	}
	opts.Session.Add(cmd)
	opts.Jail.Add(cmd)
	cmd.Flags().IntVar(&opts.MaxOutput, "max-output", mcpserver.DefaultMaxOutput, "characters of a block's output one result carries")
	cmd.Flags().BoolVar(&opts.NoEcho, "no-echo", false, "do not show the repr of a block's trailing expression (also sandbox.echo = false)")
	return cmd
}

func runMCP(opts *MCPOptions) error {
	s := opts.Session.Streams
	c, policy, err := opts.Session.Open(&opts.Jail)
	if err != nil {
		return err
	}
	wire := s.Out
	if f, ok := wire.(*os.File); ok && f.Fd() == 1 {
		if wire, err = claimStdout(); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st := config.Load(s.Layout().UserConfig())
	maxAttach := int64(st.SandboxMaxAttachmentMB.Value) << 20
	cfg := mcpserver.Config{Session: c, Name: "vis-agent-sandbox", Version: opts.Version, MaxOutput: opts.MaxOutput, Policy: policy,
		MaxAttachment: maxAttach, Echo: st.SandboxEcho.Value && !opts.NoEcho}
	if c.Remote == nil { // fork_session copies a session of this machine
		cfg.Fork = mcpFork(opts.Session, &opts.Jail)
	}
	err = mcpserver.Run(ctx, cfg, mcpserver.Stdio(s.In, wire))
	if err == nil || errors.Is(err, context.Canceled) {
		return nil // the client closed standard input, or a signal
	}
	return fmt.Errorf("the MCP connection failed: %w", err)
}

// mcpTools lists the MCP server's tools for `sandbox mcp --help`, from
// the server's own list, so that the help names every tool it offers.
func mcpTools() string {
	var b strings.Builder
	width := 0
	for _, t := range mcpserver.Tools() {
		width = max(width, len(t.Name))
	}
	for _, t := range mcpserver.Tools() {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, t.Name, t.Title)
	}
	return b.String()
}

// claimStdout keeps the process's standard output for JSON-RPC alone: the
// returned file is a copy of it, and descriptor 1 becomes standard error,
// so that a stray write by anything in this process (a library, a runtime
// message) cannot corrupt the protocol.
func claimStdout() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("keep standard output for the protocol: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup2(2, 1); err != nil {
		return nil, fmt.Errorf("keep standard output for the protocol: %w", err)
	}
	os.Stdout = os.Stderr
	return os.NewFile(uintptr(fd), "mcp-stdout"), nil
}
