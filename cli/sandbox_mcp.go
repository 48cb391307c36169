package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/mcpserver"
)

func newSandboxMCPCmd(s Streams) *cobra.Command {
	var (
		sf        = sessionFlags{s: s}
		jf        jailFlags
		maxOutput int
		noEcho    bool
	)
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
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if maxOutput <= 0 {
				return usageError{fmt.Errorf("invalid --max-output %d: it must be a positive number of characters", maxOutput)}
			}
			c, policy, err := sf.open(&jf)
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
			cfg := mcpserver.Config{Session: c, Name: "vis-agent-sandbox", Version: buildVersion(), MaxOutput: maxOutput, Policy: policy,
				MaxAttachment: maxAttach, Echo: st.SandboxEcho.Value && !noEcho}
			if c.Remote == nil { // fork_session copies a session of this machine
				cfg.Fork = mcpFork(sf, &jf)
			}
			err = mcpserver.Run(ctx, cfg, mcpserver.Stdio(s.In, wire))
			if err == nil || errors.Is(err, context.Canceled) {
				return nil // the client closed standard input, or a signal
			}
			return fmt.Errorf("the MCP connection failed: %w", err)
		}),
	}
	sf.add(cmd)
	jf.add(cmd)
	cmd.Flags().IntVar(&maxOutput, "max-output", mcpserver.DefaultMaxOutput, "characters of a block's output one result carries")
	cmd.Flags().BoolVar(&noEcho, "no-echo", false, "do not show the repr of a block's trailing expression (also sandbox.echo = false)")
	return cmd
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
