package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/child"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/host"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
	"github.com/vis-agent/vis-agent/sandbox/session"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// sessionFlags are --session, --workspace and --host.
type sessionFlags struct {
	name, workspace string
	host            string
	// local: a session of this machine only (connect: no --host).
	local bool
	s     Streams
}

func (sf *sessionFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&sf.name, "session", session.DefaultName, "the session's name ([A-Za-z0-9._-], at most 64)")
	workspace := "the session's workspace folder (default: the current folder; with --host, connect's folder there)"
	if sf.local {
		workspace = "the session's workspace folder (default: the current folder)"
	}
	cmd.Flags().StringVar(&sf.workspace, "workspace", "", workspace)
	// Registering twice (a command adding the flags twice) is the only error.
	_ = cmd.RegisterFlagCompletionFunc("session", sf.completeSessions)
	if !sf.local {
		addHostFlag(cmd, &sf.host)
	}
}

// addHostFlag adds --host URL.
func addHostFlag(cmd *cobra.Command, host *string) {
	cmd.Flags().StringVar(host, "host", "", "the machine of the session: ssh://[user@]host[:port][/path/to/vis-agent], kubectl://namespace/pod[/container][?context=NAME], docker://container or podman://container (default: $"+client.HostEnv+", else this one)")
}

// hostTarget is the machine --host (else $VIS_SANDBOX_HOST) names; nil
// for this one.
func hostTarget(s Streams, host string) (*client.Target, error) {
	if host == "" {
		host = s.Getenv(client.HostEnv)
	}
	if host == "" {
		return nil, nil
	}
	t, err := client.ParseTarget(host)
	if err != nil {
		return nil, usageError{err}
	}
	return &t, nil
}

// remote is the client of the session the flags name on the machine of
// --host, with jf's flags passed on to connect there; nil without --host.
func (sf *sessionFlags) remote(jf *jailFlags) (*client.Session, error) {
	if sf.local {
		return nil, nil
	}
	t, err := hostTarget(sf.s, sf.host)
	if t == nil || err != nil {
		return nil, err
	}
	if err := session.CheckName(sf.name); err != nil {
		return nil, usageError{err}
	}
	args := []string{"--session", sf.name}
	if sf.workspace != "" {
		args = append(args, "--workspace", sf.workspace)
	}
	if jf != nil {
		args = append(args, jf.args()...)
	}
	return client.OpenRemote(*t, session.Meta{Name: sf.name, Workspace: sf.workspace}, args, muxConfig(sf.s)), nil
}

// muxConfig is how the client reaches its multiplexers of --host targets:
// nil when $VIS_SANDBOX_MUX is 0 (every request runs the engine's
// command) or this binary cannot be found to start one.
func muxConfig(s Streams) *remotemux.Config {
	if s.Getenv(remotemux.EnvOff) == "0" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return &remotemux.Config{Dir: s.Layout().RemoteMux(), Command: []string{exe, "sandbox", "mux", "--"}, Env: s.Environ()}
}

// meta checks the flags and names the session.
func (sf *sessionFlags) meta() (session.Meta, error) {
	if err := session.CheckName(sf.name); err != nil {
		return session.Meta{}, usageError{err}
	}
	abs, err := sf.workspaceDir()
	if err != nil {
		return session.Meta{}, err
	}
	return session.Meta{Name: sf.name, Workspace: abs}, nil
}

// workspaceDir is the workspace folder --workspace names (default: the
// working folder), absolute with its links resolved.
func (sf *sessionFlags) workspaceDir() (string, error) {
	ws := sf.workspace
	if ws == "" {
		if ws = sf.s.Dir; ws == "" {
			return "", errors.New("the working folder cannot be read (was it removed?): give --workspace")
		}
	}
	if !filepath.IsAbs(ws) {
		ws = filepath.Join(sf.s.Dir, ws)
	}
	abs, err := filepath.Abs(ws)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", usageError{fmt.Errorf("workspace %s: %w", ws, errors.Unwrap(err))}
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", usageError{fmt.Errorf("workspace %s is not a folder", ws)}
	}
	return abs, nil
}

// open is the client of the session the flags name, and the jail policy
// of the user's settings and jf (nil: no jail flags); a host it starts
// starts its child under that policy.
func (sf *sessionFlags) open(jf *jailFlags) (*client.Session, protocol.Policy, error) {
	// Remote: the policy is the other machine's to make (connect there).
	if c, err := sf.remote(jf); c != nil || err != nil {
		return c, protocol.Policy{}, err
	}
	m, err := sf.meta()
	if err != nil {
		return nil, protocol.Policy{}, err
	}
	root := sf.s.Layout().Sessions()
	folder := session.Find(root, m)
	if err := checkProject(folder, m.Workspace); err != nil {
		return nil, protocol.Policy{}, err
	}
	policy, err := sessionPolicy(sf.s, jf, m, folder)
	if err != nil {
		return nil, policy, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, policy, err
	}
	c, err := client.Open(root, m, append([]string{exe}, protocol.HostArgs(folder.Dir, &policy)...))
	if c != nil {
		c.Env = sf.s.Environ()
	}
	return c, policy, err
}

// existing is the client of a session that must already exist.
func (sf *sessionFlags) existing() (*client.Session, error) {
	if c, err := sf.remote(nil); c != nil || err != nil {
		return c, err
	}
	m, err := sf.meta()
	if err != nil {
		return nil, err
	}
	f := session.Find(sf.s.Layout().Sessions(), m)
	if _, err := os.Stat(f.Dir); err != nil {
		return nil, fmt.Errorf("no session %q for workspace %s", m.Name, m.Workspace)
	}
	return &client.Session{Folder: f, Meta: m}, nil
}

// settled is existing's session once the host has saved the snapshot
// after its last block and journaled it (a running session saves after
// the block's answer): for the commands that read its folder.
func (sf *sessionFlags) settled() (*client.Session, error) {
	c, err := sf.existing()
	if err != nil {
		return nil, err
	}
	if err := c.Settle(); err != nil {
		return nil, err
	}
	return c, nil
}

// addSessionCmds adds the session commands to `vis-agent sandbox`.
func addSessionCmds(sandbox *cobra.Command, s Streams) {
	sandbox.AddCommand(newSandboxRunCmd(s), newSandboxDefsCmd(s), newSandboxListCmd(s),
		newSandboxControlCmd(s, "stop", "Snapshot and stop a session (its Python process and host)"),
		newSandboxControlCmd(s, "restart", "Replace a session's Python process with a new one restored from the snapshot"),
		newSandboxControlCmd(s, "interrupt", "Raise KeyboardInterrupt in a session's running block"),
		newSandboxRmCmd(s), newSandboxHostCmd(s), newSandboxChildCmd(s), newSandboxConfineCmd(), newSandboxCheckWorkerCmd(), newSandboxGuardCmd(),
		newSandboxAttachmentsCmd(s), newSandboxAttachmentCmd(s), newSandboxConnectCmd(s), newSandboxMuxCmd(s),
		newSandboxExportCmd(s), newSandboxImportCmd(s), newSandboxLogCmd(s), newSandboxRewindCmd(s), newSandboxForkCmd(s))
}

func newSandboxRunCmd(s Streams) *cobra.Command {
	var (
		sf      = sessionFlags{s: s}
		code    string
		timeout string
		asJSON  bool
		echo    bool
		noEcho  bool
		raw     bool
		jf      jailFlags
	)
	cmd := &cobra.Command{
		Use:   "run [--session S] [--workspace D] [--timeout DUR] [flags] [-c CODE | FILE | -]",
		Short: "Run a Python block in a persistent sandbox session",
		Long: `Run one Python block in the session's persistent namespace: what earlier
blocks defined is still there, also after the session restarted (its
snapshot is restored, with a [Sandbox restarted] notice). The block is
-c CODE, FILE, or standard input (- or nothing, when it is not a terminal).
Output streams as the block prints; an error goes to stderr. When the
block's last statement is an expression whose value is not None, its repr
(cut to 4 KB) follows the output, as a notebook's Out; --no-echo (or
sandbox.echo = false) turns that off. Status 0, or 1 when the block raised,
was refused or timed out, 2 for a bad command line.

On a terminal, escape sequences the block prints other than colours
(the clipboard, the title, the screen) are shown escaped (\x1b]52;…);
--raw passes them through.

--timeout (default 300s, kept within 3s..35m) interrupts the block with
KeyboardInterrupt; a block that does not stop 5 s later has its Python
process retired (hang record under $VIS_HOME/logs).

The session's Python is jailed: files only in the workspace, the session's
folder and its temp folder (read-only: Python's own), no new processes, no
ctypes, no signals to other processes, at most sandbox.max_threads threads
and sandbox.memory_mb of address space, and the network only to the package
index (python.index_url, else PyPI) through a proxy; session.access says
what is in force. --no-jail lifts the jail (not the thread and memory caps),
--allow-host adds hosts, --network on opens the network, --no-network
refuses it, --root/--read-only-root add folders; a block asking for another
policy than the running one restarts the session's Python first, with the
notice.`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			d, err := parseTimeout(timeout, s.Err)
			if err != nil {
				return err
			}
			src, err := blockSource(s, cmd, code, args)
			if err != nil {
				return err
			}
			c, policy, err := sf.open(&jf)
			if err != nil {
				return err
			}
			c.Client = client.NewClient("run", "")
			if echo && noEcho {
				return usageError{errors.New("give --echo or --no-echo, not both")}
			}
			if !echo {
				echo = !noEcho && config.Load(sf.s.Layout().UserConfig()).SandboxEcho.Value
			}
			stdout, stderr := terminalSafe(s.Out, s.OutTerminal && !raw), terminalSafe(s.Err, s.ErrTerminal && !raw)
			defer stdout.Flush()
			defer stderr.Flush()
			err = runBlock(c, src, client.RunOptions{Timeout: d, Echo: echo, Policy: &policy}, asJSON, stdout, stderr)
			if errors.As(err, new(exitError)) || err == nil {
				saveRunPlan(s, cmd, c, protocol.Request{Op: protocol.OpRun, Code: src, Echo: echo, Policy: &policy})
			}
			return err
		}),
	}
	sf.add(cmd)
	jf.add(cmd)
	cmd.Flags().StringVarP(&code, "code", "c", "", "the block to run")
	cmd.Flags().StringVar(&timeout, "timeout", "", "interrupt the block after DUR (e.g. 30s, 2m; default 300s)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: session, workspace, stdout, error, repaired, repair_note, restarted, notice, timed_out, duration_ms, attachments, checks, git")
	cmd.Flags().BoolVar(&echo, "echo", false, "show the repr of a trailing expression even when sandbox.echo = false")
	cmd.Flags().BoolVar(&noEcho, "no-echo", false, "do not show the repr of a trailing expression")
	cmd.Flags().BoolVar(&raw, "raw", false, "on a terminal, pass the block's escape sequences through (by default only colours are; others are shown escaped)")
	return cmd
}

// flushWriter is a stream of `sandbox run`'s output.
type flushWriter interface {
	io.Writer
	Flush() error
}

// passThrough is a flushWriter with nothing to flush.
type passThrough struct{ io.Writer }

func (passThrough) Flush() error { return nil }

// terminalSafe is w, made to show a block's escape sequences other than
// colours escaped when safe is set (w is a terminal): the block must not
// drive the user's terminal (clipboard, title, screen).
func terminalSafe(w io.Writer, safe bool) flushWriter {
	if safe {
		return &termtext.Writer{W: w, KeepCR: true}
	}
	return passThrough{w}
}

// parseTimeout reads --timeout: a Go duration (30s, 2m) or seconds. A
// timeout outside the host's bounds is clamped, and a line on stderr says
// so.
func parseTimeout(s string, stderr io.Writer) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, usageError{fmt.Errorf("invalid --timeout %q: use a duration such as 30s or 5m", s)}
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 {
		return 0, usageError{fmt.Errorf("invalid --timeout %q: it must be positive", s)}
	}
	if c := protocol.ClampTimeout(d); c != d {
		fmt.Fprintf(stderr, "vis-agent: --timeout %s is outside %s..%s; the block gets %s\n", s, protocol.MinTimeout, protocol.MaxTimeout, c)
		d = c
	}
	return d, nil
}

// blockSource is the block: -c CODE, FILE, or standard input.
func blockSource(s Streams, cmd *cobra.Command, code string, args []string) (string, error) {
	if cmd.Flags().Changed("code") {
		if len(args) > 0 {
			return "", usageError{errors.New("give the block once: -c CODE, FILE or -")}
		}
		return code, nil
	}
	if len(args) == 0 && s.InTerminal {
		return "", usageError{errors.New("no block: give -c CODE, FILE, or pipe it on standard input")}
	}
	src, err := readBlock(s, args)
	if err != nil {
		return "", err
	}
	return src, nil
}

// forwardInterrupts makes Ctrl-C (SIGINT) cancel this run: its block is
// interrupted, as in python, or withdrawn while it still waits for the
// session; a second one leaves at once (the block goes on). It
// returns the function that stops forwarding.
func forwardInterrupts(cancel context.CancelFunc, stderr io.Writer) func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		// This run's own block only: withdrawn while it waits behind
		// another client's, interrupted when it runs.
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "vis-agent: left the block running in the session")
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// runBlock runs src and reports it as people or programs (--json) read it.
func runBlock(s *client.Session, src string, opts client.RunOptions, asJSON bool, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer forwardInterrupts(cancel, stderr)()
	var printed strings.Builder
	res, err := s.RunContext(ctx, src, opts, func(ev protocol.Event) {
		switch {
		case ev.Ev == protocol.EvStarted:
		case ev.Ev == protocol.EvWait:
			fmt.Fprintf(stderr, "vis-agent: %s\n", termtext.Text(ev.Message))
		case asJSON:
			if ev.Ev == protocol.EvOut {
				printed.WriteString(ev.Data)
			}
		case ev.Ev == protocol.EvNote:
			fmt.Fprintln(stdout, ev.Data)
		case ev.Stream == protocol.StreamStderr:
			io.WriteString(stderr, ev.Data)
		default:
			io.WriteString(stdout, ev.Data)
		}
	})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s.Report(printed.String(), res)); err != nil {
			return err
		}
	} else {
		for _, a := range res.Attachments {
			fmt.Fprintf(stderr, "[attached %s version %d: %s, %s, id %s]\n", termtext.Line(a.Filename), a.Version, termtext.Line(a.MediaType), sizeText(a.Size), termtext.Line(a.ID))
		}
		if res.Error != nil {
			io.WriteString(stderr, res.Error.Traceback)
		}
	}
	if res.Error != nil {
		return exitError{1}
	}
	return nil
}

func newSandboxDefsCmd(s Streams) *cobra.Command {
	var (
		sf      = sessionFlags{s: s}
		o       client.DefsOptions
		pattern string
	)
	cmd := &cobra.Command{
		Use:   "defs [--session S] [NAME] [--pattern RE] [--details] [--json]",
		Short: "List a session's helpers and variables, as defs() does",
		Args:  cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Name = args[0]
			}
			o.Pattern = pattern
			c, _, err := sf.open(nil)
			if err != nil {
				return err
			}
			text, err := c.Defs(o)
			if err != nil {
				return err
			}
			// Names and docstrings are the session's; JSON as JSON.
			text = strings.TrimRight(text, "\n") + "\n"
			if o.JSON {
				_, err = s.Out.Write(termtext.JSON([]byte(text)))
				return err
			}
			_, err = io.WriteString(s.Out, termtext.Text(text))
			return err
		}),
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&pattern, "pattern", "", "only names matching this regular expression")
	cmd.Flags().IntVar(&o.Limit, "limit", 20, "rows per page")
	cmd.Flags().IntVar(&o.Offset, "offset", 0, "rows to skip")
	cmd.Flags().BoolVar(&o.Details, "details", false, "with NAME: its dependencies too")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the helpers and variables as JSON")
	return cmd
}

// listed is one row of `sandbox list`.
type listed struct {
	Name          string `json:"name"`
	Workspace     string `json:"workspace"`
	State         string `json:"state"`
	HostPID       int    `json:"host_pid"`
	ChildPID      int    `json:"child_pid"`
	IdleSeconds   int64  `json:"idle_seconds"`
	SnapshotBytes int64  `json:"snapshot_bytes"`
	SavedNames    int    `json:"saved_names"`
	// Jail and Network are the policy its child runs (or last ran) under;
	// null when its host never said.
	Jail    *bool `json:"jail"`
	Network *bool `json:"network"`
	// Hosts is the allow list when the network is one.
	Hosts *protocol.Hosts `json:"hosts,omitempty"`
	// KernelMissing: what the running child's kernel layer could not
	// enforce.
	KernelMissing string `json:"kernel_missing"`
	// ForkOf: the session it was forked from (and at which block).
	ForkOf string `json:"fork_of,omitempty"`
}

func newSandboxListCmd(s Streams) *cobra.Command {
	var (
		asJSON bool
		host   string
	)
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the sandbox sessions",
		Long: `List the sandbox sessions: state, host and child processes, idle time,
snapshot size, NAMES, how many names the snapshot brings back after a
restart (helpers, classes, imports and variables; both as last saved: the
save after a block ends a moment after its answer), and the jail and network
in force (on, off, or allow: each allow list is under the table, with the
sessions it holds for).`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			t, err := hostTarget(s, host)
			if err != nil {
				return err
			}
			var rows []listed
			if t != nil {
				data, err := client.ListRemote(*t, muxConfig(s))
				if err == nil {
					err = json.Unmarshal(data, &rows)
				}
				if err != nil {
					return err
				}
			} else if rows, err = listRows(s); err != nil {
				return err
			}
			w := s.Out
			if asJSON {
				return printJSON(w, rows, "  ")
			}
			// The rows of --host are a remote peer's to say: every
			// string one line of text.
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSTATE\tHOST\tCHILD\tIDLE\tSNAPSHOT\tNAMES\tJAIL\tNETWORK\tWORKSPACE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d B\t%d\t%s\t%s\t%s\n", termtext.Line(r.Name), termtext.Line(r.State), pidText(r.HostPID), pidText(r.ChildPID),
					idleText(r), r.SnapshotBytes, r.SavedNames, onOffText(r.Jail), networkText(r), termtext.Line(r.Workspace))
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
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	addHostFlag(cmd, &host)
	return cmd
}

// networkText is NETWORK's column: on, off, or allow (the allow list).
func networkText(r listed) string {
	if r.Hosts != nil {
		return "allow"
	}
	return onOffText(r.Network)
}

// listRows describes the sessions of this machine.
func listRows(s Streams) ([]listed, error) {
	folders, err := session.All(s.Layout().Sessions())
	if err != nil {
		return nil, err
	}
	rows := []listed{}
	for _, f := range folders {
		m, err := f.Meta()
		if err != nil {
			continue
		}
		rec := f.Host()
		row := listed{Name: m.Name, Workspace: m.Workspace, State: "stopped", SnapshotBytes: snapshotBytes(f.Dir), SavedNames: max(rec.Saved, 0)}
		if m.ForkOf != nil {
			row.ForkOf = m.ForkOf.String()
		}
		if rec.Policy != nil {
			row.Jail, row.Network = &rec.Policy.Jail, &rec.Policy.Network
			if rec.Policy.Proxied() {
				row.Hosts = rec.Policy.Hosts
			}
		}
		if f.Running() {
			row.State, row.HostPID, row.ChildPID = "running", rec.HostPID, rec.ChildPID
			row.IdleSeconds = max(0, time.Since(time.UnixMilli(rec.LastUse)).Milliseconds()/1000)
			row.KernelMissing = rec.KernelMissing
		}
		rows = append(rows, row)
	}
	return rows, nil
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

func idleText(r listed) string {
	if r.State != "running" {
		return "-"
	}
	return fmt.Sprintf("%ds", r.IdleSeconds)
}

// snapshotBytes is the size of the session's snapshot and spill files:
// everything in its folder but the host's own files, the child's temp
// folder, install()'s packages and matplotlib's caches. A file linked
// twice (the history's links to a snapshot) counts once.
func snapshotBytes(dir string) int64 {
	var n int64
	seen := map[[2]uint64]bool{}
	own := map[string]bool{"session.json": true, "host.json": true, "stopped.json": true, "host.alive": true,
		"start.lock": true, "sock": true, session.LogFile: true}
	state := filepath.Join(dir, "state")
	skip := map[string]bool{filepath.Join(dir, "tmp"): true, filepath.Join(dir, "packages"): true, filepath.Join(state, "cache"): true,
		filepath.Join(state, "matplotlib"): true}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && skip[p] {
			return filepath.SkipDir // the child's temp folder, install()'s packages, matplotlib's caches
		}
		if err != nil || d.IsDir() || own[d.Name()] && filepath.Dir(p) == dir {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			id := [2]uint64{uint64(st.Dev), st.Ino}
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		n += info.Size()
		return nil
	})
	return n
}

func newSandboxControlCmd(s Streams, op, short string) *cobra.Command {
	var (
		sf       = sessionFlags{s: s}
		force    bool
		fresh    bool
		drop     []string
		anyBlock bool
	)
	cmd := &cobra.Command{
		Use:   op + " [--session S] [--workspace D]",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkDrop(fresh, drop); err != nil {
				return usageError{err}
			}
			c, err := sf.existing()
			if err != nil {
				return err
			}
			name := termtext.Line(strconv.Quote(c.Meta.Name))
			var did string
			switch {
			case op == "stop":
				err, did = c.Stop(force), "Stopped session "+name+"; its next block restores the snapshot."
			case op == "restart" && (fresh || len(drop) > 0):
				// with a host command: a stopped session is started for it
				if c, _, err = sf.open(nil); err == nil {
					err = c.Restart(client.RestartOptions{Force: force, Fresh: fresh, Drop: drop})
				}
				did = "Restarted session " + name + " empty: its snapshot is discarded."
				if !fresh {
					did = "Restarted session " + name + " without " + strings.Join(drop, ", ") + "."
				}
			case op == "restart":
				err = c.Restart(client.RestartOptions{Force: force})
				did = "Restarted session " + name + "; its next block restores the snapshot."
			default:
				// A command-line interrupt owns the blocks of `sandbox run`.
				c.Client = protocol.Client{Kind: "run"}
				var msg string
				if msg, err = c.Interrupt(anyBlock); err == nil {
					fmt.Fprintln(sf.s.Out, termtext.Line(capitalize(msg))+".")
				}
			}
			if errors.Is(err, client.ErrNotRunning) {
				if op == "stop" {
					fmt.Fprintf(sf.s.Out, "Session %s was not running.\n", name)
					return nil
				}
				return fmt.Errorf("session %q is not running", c.Meta.Name)
			}
			if err == nil && did != "" {
				fmt.Fprintln(sf.s.Out, did)
			}
			return err
		}),
	}
	sf.add(cmd)
	if op != "interrupt" {
		cmd.Flags().BoolVar(&force, "force", false, "also while a block runs (it is killed)")
	} else {
		cmd.Use = "interrupt [--session S] [--workspace D] [--any]"
		cmd.Long = `Raise KeyboardInterrupt in the session's running block when a
` + "`sandbox run`" + ` started it, or withdraw the oldest such block waiting for the
session; --any also stops a block of the REPL or of an MCP client. The
answer says whose block was stopped.`
		cmd.Flags().BoolVar(&anyBlock, "any", false, "also another client's block (the REPL's, an MCP client's)")
	}
	if op == "restart" {
		cmd.Use = "restart [--session S] [--workspace D] [--fresh | --drop NAME...] [flags]"
		cmd.Long = `Replace a session's Python process with a new one restored from the
snapshot; the next block's output starts with the [Sandbox restarted] notice.

--fresh discards the snapshot (its helpers, variables and imports): the
session starts empty. --drop NAME (repeatable) leaves one name out of the
restore and so out of the snapshot, for a value or helper that should not
come back. Either starts the new process at once (a stopped session too).`
		cmd.Flags().BoolVar(&fresh, "fresh", false, "discard the snapshot: the session starts empty")
		cmd.Flags().StringArrayVar(&drop, "drop", nil, "leave NAME out of the restored session and its snapshot (repeatable)")
	}
	return cmd
}

// capitalize is s with its first letter upper case, for a host's answer
// printed as a sentence.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// checkDrop refuses --fresh with --drop, and a --drop that names no
// Python name.
func checkDrop(fresh bool, drop []string) error {
	if fresh && len(drop) > 0 {
		return errors.New("give --fresh or --drop, not both: --fresh discards every name")
	}
	for _, name := range drop {
		if !isIdentifier(name) {
			return fmt.Errorf("--drop %q: not a Python name", name)
		}
	}
	return nil
}

// isIdentifier reports whether s is a Python identifier (ASCII letters,
// digits and _, or any letter of another script).
func isIdentifier(s string) bool {
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

func newSandboxRmCmd(s Streams) *cobra.Command {
	var (
		sf    = sessionFlags{s: s}
		force bool
	)
	cmd := &cobra.Command{
		Use:   "rm --session S [--workspace D] [--force]",
		Short: "Delete a session: its snapshot, spill files and attachments (stopping it first)",
		Args:  cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("session") {
				return usageError{errors.New("rm needs --session NAME")}
			}
			c, err := sf.existing()
			if err != nil {
				return err
			}
			if err := c.Remove(force); err != nil {
				return err
			}
			of := ""
			if c.Meta.Workspace != "" { // known here; a remote one is the other machine's
				of = " of " + termtext.Line(c.Meta.Workspace)
			}
			fmt.Fprintf(s.Out, "Removed session %s%s: its snapshot, spill files and attachments.\n", termtext.Line(strconv.Quote(c.Meta.Name)), of)
			return nil
		}),
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "also while a block runs (it is killed)")
	return cmd
}

func newSandboxHostCmd(s Streams) *cobra.Command {
	var dir, policy string
	cmd := &cobra.Command{
		Use:    "host --dir FOLDER [--policy JSON]",
		Short:  "Serve a sandbox session (started by the clients)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return host.Serve(host.Options{Dir: dir, Policy: policy, Streams: s,
				DefaultPolicy: func(m session.Meta, f session.Folder) (protocol.Policy, error) {
					return sessionPolicy(s, nil, m, f)
				}})
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the session folder")
	cmd.Flags().StringVar(&policy, "policy", "", "the jail of the first child, JSON (default: the settings')")
	return cmd
}

func newSandboxChildCmd(s Streams) *cobra.Command {
	var dir string
	var dropPrivileges bool
	cmd := &cobra.Command{
		Use:    "child --dir FOLDER [" + protocol.DropPrivilegesFlag + "]",
		Short:  "Run a sandbox session's Python (started by its host)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			code, err := child.Serve(child.Options{Dir: dir, DropPrivileges: dropPrivileges, Streams: s, WayOut: sandboxWayOut})
			if err == nil && code != 0 {
				err = exitError{code}
			}
			return err
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the session folder")
	cmd.Flags().BoolVar(&dropPrivileges, strings.TrimPrefix(protocol.DropPrivilegesFlag, "--"), false,
		"the policy drops privileges: the bounding set and no_new_privs are set before Go starts")
	cmd.Flags().Bool(strings.TrimPrefix(protocol.NetworkFlag, "--"), false,
		"the network is an allow list: the network namespace is made before Go starts")
	return cmd
}
