package sandbox

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/testing/clitest"
	"github.com/vis-agent/vis-agent/sandbox/mcpserver"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

func TestRunOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdRun, "--session", "s", "-c", "x = 1", "--timeout", "30s", "--echo", "--raw", "--json",
		"--no-jail", "--root", "/r", "--allow-host", "h", "--network", "allow")
	if err != nil {
		t.Fatal(err)
	}
	if o.Session.Name != "s" || o.Code != "x = 1" || !o.CodeGiven || o.Timeout != "30s" || !o.Echo || o.NoEcho || !o.Raw || !o.JSON ||
		!o.Jail.NoJail || !slices.Equal(o.Jail.Roots, []string{"/r"}) || !slices.Equal(o.Jail.AllowHosts, []string{"h"}) || o.Jail.Network != "allow" {
		t.Errorf("run options: %+v", o)
	}
	slices.Sort(o.Given)
	if want := []string{"allow-host", "code", "echo", "json", "network", "no-jail", "raw", "root", "session", "timeout"}; !slices.Equal(o.Given, want) {
		t.Errorf("flags given: %q, want %q", o.Given, want)
	}

	o, err = clitest.Parse(t, NewCmdRun, "block.py")
	if err != nil || o.Session.Name != session.DefaultName || o.CodeGiven || !slices.Equal(o.Files, []string{"block.py"}) || len(o.Given) != 0 {
		t.Errorf("run block.py: %v, %+v", err, o)
	}
	// -c given empty is a block (the empty one).
	if o, err = clitest.Parse(t, NewCmdRun, "-c", ""); err != nil || !o.CodeGiven {
		t.Errorf("run -c '': %v, %+v", err, o)
	}
	if o, err = clitest.Parse(t, NewCmdRun, "a.py", "b.py"); err == nil || o != nil {
		t.Error("run takes two files")
	}
}

func TestDefsOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdDefs, "helper", "--pattern", "^h", "--details", "--json", "--offset", "3")
	if err != nil {
		t.Fatal(err)
	}
	if d := o.Defs; d.Name != "helper" || d.Pattern != "^h" || !d.Details || !d.JSON || d.Offset != 3 || d.Limit != 20 {
		t.Errorf("defs options: %+v", d)
	}
	if o, err = clitest.Parse(t, NewCmdDefs, "a", "b"); err == nil || o != nil {
		t.Error("defs takes two names")
	}
}

func TestListOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdList, "--json", "--host", "ssh://h")
	if err != nil || !o.JSON || o.Host != "ssh://h" {
		t.Errorf("list options: %v, %+v", err, o)
	}
	if o, err = clitest.Parse(t, NewCmdList, "extra"); err == nil || o != nil {
		t.Error("list takes an argument")
	}
}

func TestControlOptions(t *testing.T) {
	cmd := func(op string) func(*cmdutil.Factory, func(*ControlOptions) error) *cobra.Command {
		return func(f *cmdutil.Factory, runF func(*ControlOptions) error) *cobra.Command {
			return NewCmdControl(f, op, op, runF)
		}
	}
	o, err := clitest.Parse(t, cmd("restart"), "--drop", "x", "--drop", "_y2", "--force")
	if err != nil || o.Op != "restart" || !o.Force || o.Fresh || !slices.Equal(o.Drop, []string{"x", "_y2"}) {
		t.Errorf("restart --drop: %v, %+v", err, o)
	}
	o, err = clitest.Parse(t, cmd("restart"), "--fresh", "--drop", "x")
	clitest.WantUsage(t, "restart --fresh --drop", o, err)
	o, err = clitest.Parse(t, cmd("restart"), "--drop", "1x")
	clitest.WantUsage(t, "restart --drop 1x", o, err)
	if o, err = clitest.Parse(t, cmd("stop"), "--fresh"); err == nil || o != nil {
		t.Error("stop takes --fresh")
	}
	if o, err = clitest.Parse(t, cmd("interrupt"), "--any"); err != nil || !o.Any || o.Op != "interrupt" {
		t.Errorf("interrupt --any: %v, %+v", err, o)
	}
	if o, err = clitest.Parse(t, cmd("interrupt"), "--force"); err == nil || o != nil {
		t.Error("interrupt takes --force")
	}
}

func TestRmOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdRm)
	clitest.WantUsage(t, "rm without --session", o, err)
	if o, err = clitest.Parse(t, NewCmdRm, "--session", "default", "--force"); err != nil || o.Session.Name != "default" || !o.Force {
		t.Errorf("rm --session default --force: %v, %+v", err, o)
	}
}

func TestLogOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdLog)
	if err != nil || o.Lines != 20 || o.Follow || o.JSON {
		t.Errorf("log: %v, %+v", err, o)
	}
	if o, err = clitest.Parse(t, NewCmdLog, "-f", "--json", "-n", "0"); err != nil || o.Lines != 0 || !o.Follow || !o.JSON {
		t.Errorf("log -f --json -n 0: %v, %+v", err, o)
	}
	o, err = clitest.Parse(t, NewCmdLog, "-n", "-1")
	clitest.WantUsage(t, "log -n -1", o, err)
}

func TestAttachmentOptions(t *testing.T) {
	g, err := clitest.Parse(t, NewCmdAttachmentGet, "notes.md", "--version", "-2", "-o", "-", "--force")
	if err != nil || g.Attachment != "notes.md" || g.Version != -2 || g.Output != "-" || !g.Force {
		t.Errorf("attachment get: %v, %+v", err, g)
	}
	g, err = clitest.Parse(t, NewCmdAttachmentGet)
	clitest.WantUsage(t, "attachment get without ID", g, err)

	c, err := clitest.Parse(t, NewCmdAttachmentComment, "id1", "looks right", "--version", "-1")
	if err != nil || c.Attachment != "id1" || c.Text != "looks right" || c.Version != -1 {
		t.Errorf("attachment comment: %v, %+v", err, c)
	}
	c, err = clitest.Parse(t, NewCmdAttachmentComment, "id1", "text")
	clitest.WantUsage(t, "attachment comment without --version", c, err)
	c, err = clitest.Parse(t, NewCmdAttachmentComment, "id1", " ", "--version", "1")
	clitest.WantUsage(t, "attachment comment with empty text", c, err)

	a, err := clitest.Parse(t, NewCmdAttachments, "--json")
	if err != nil || !a.JSON {
		t.Errorf("attachments --json: %v, %+v", err, a)
	}
}

func TestTransferOptions(t *testing.T) {
	e, err := clitest.Parse(t, NewCmdExport, "-o", "-", "--force")
	if err != nil || e.Output != "-" || !e.Force || e.Version != "v-test" || !e.Session.Local {
		t.Errorf("export: %v, %+v", err, e)
	}
	if e, err = clitest.Parse(t, NewCmdExport, "--host", "ssh://h"); err == nil || e != nil {
		t.Error("export takes --host")
	}
	i, err := clitest.Parse(t, NewCmdImport, "s.vis-session.zip")
	if err != nil || i.Archive != "s.vis-session.zip" || i.SessionGiven {
		t.Errorf("import: %v, %+v", err, i)
	}
	if i, err = clitest.Parse(t, NewCmdImport, "s.zip", "--session", "new"); err != nil || !i.SessionGiven || i.Session.Name != "new" {
		t.Errorf("import --session new: %v, %+v", err, i)
	}
	i, err = clitest.Parse(t, NewCmdImport)
	clitest.WantUsage(t, "import without FILE", i, err)
}

func TestMCPOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdMCP, "--no-echo", "--network", "off")
	if err != nil || o.MaxOutput != mcpserver.DefaultMaxOutput || !o.NoEcho || o.Jail.Network != "off" || o.Version != "v-test" {
		t.Errorf("mcp: %v, %+v", err, o)
	}
	o, err = clitest.Parse(t, NewCmdMCP, "--max-output", "0")
	clitest.WantUsage(t, "mcp --max-output 0", o, err)
}

func TestReplOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdRepl, "--network", "allow", "--allow-host", "h", "--deny-host", "d", "--no-echo")
	if err != nil || o.Network != "allow" || !slices.Equal(o.Allow, []string{"h"}) || !slices.Equal(o.Deny, []string{"d"}) || !o.NoEcho {
		t.Errorf("repl: %v, %+v", err, o)
	}
	if o, err = clitest.Parse(t, NewCmdRepl, "--no-jail"); err == nil || o != nil {
		t.Error("repl takes --no-jail")
	}
}

func TestCheckAndRepairOptions(t *testing.T) {
	c, err := clitest.Parse(t, NewCmdCheck, "--fix", "a.py", "b.json")
	if err != nil || !c.Fix || !slices.Equal(c.Files, []string{"a.py", "b.json"}) {
		t.Errorf("check: %v, %+v", err, c)
	}
	if c, err = clitest.Parse(t, NewCmdCheck); err == nil || c != nil {
		t.Error("check runs without a FILE")
	}
	r, err := clitest.Parse(t, NewCmdRepair, "--json", "-")
	if err != nil || !r.JSON || !slices.Equal(r.Files, []string{"-"}) {
		t.Errorf("repair: %v, %+v", err, r)
	}
}

func TestForkOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdFork, "try", "--at", "3", "--new-workspace", "w", "--copy-workspace")
	if err != nil || o.New != "try" || o.At != 3 || o.NewWorkspace != "w" || !o.CopyWorkspace || !o.Session.Local {
		t.Errorf("fork: %v, %+v", err, o)
	}
	for name, args := range map[string][]string{
		"fork --at 0":                      {"try", "--at", "0"},
		"fork --copy-workspace alone":      {"try", "--copy-workspace"},
		"fork with a name the store keeps": {"../x"},
	} {
		o, err := clitest.Parse(t, NewCmdFork, args...)
		clitest.WantUsage(t, name, o, err)
	}
	if o, err = clitest.Parse(t, NewCmdFork, "try", "--host", "ssh://h"); err == nil || o != nil {
		t.Error("fork takes --host")
	}
}

func TestRewindOptions(t *testing.T) {
	o, err := clitest.Parse(t, NewCmdRewind, "--session", "s", "--to", "3")
	if err != nil || o.Session.Name != "s" || o.To != 3 || o.Back != 0 {
		t.Errorf("rewind --to: %v, %+v", err, o)
	}
	if o, err = clitest.Parse(t, NewCmdRewind, "--back", "2"); err != nil || o.Back != 2 || o.To != 0 {
		t.Errorf("rewind --back: %v, %+v", err, o)
	}
	for name, args := range map[string][]string{
		"rewind --to and --back": {"--to", "3", "--back", "1"},
		"rewind --to 0":          {"--to", "0"},
		"rewind --back 0":        {"--back", "0"},
	} {
		o, err := clitest.Parse(t, NewCmdRewind, args...)
		clitest.WantUsage(t, name, o, err)
	}
	if o, err = clitest.Parse(t, NewCmdRewind, "extra"); err == nil || o != nil {
		t.Error("rewind takes an argument")
	}
}
