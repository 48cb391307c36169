package sandbox

import (
	"slices"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/client/runpath"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// runpath.c reads the multiplexer's own ack.
func TestRunPathMuxAck(t *testing.T) {
	if runpath.MuxAck != remotemux.Ack {
		t.Errorf("runpath.h's ack %q, remotemux.Ack %q", rune(runpath.MuxAck), rune(remotemux.Ack))
	}
}

// A remote run qualifies with every flag a local one does.
func TestRemoteRunPathFlags(t *testing.T) {
	for _, f := range runPathFlags {
		if !slices.Contains(remoteRunPathFlags, f) {
			t.Errorf("--%s qualifies locally, not for a remote session", f)
		}
	}
}

// A plan goes to a local session's socket only from its workspace and
// under the settings' policy alone; to a remote session's multiplexer,
// with the stream's header its connect reads, and never without one.
func TestPlanTarget(t *testing.T) {
	m := session.Meta{Name: "s", Workspace: "/w"}
	local := &client.Session{Folder: session.Find("/v/sessions", m), Meta: m}
	settings := &protocol.Policy{Jail: true}
	for _, c := range []struct {
		name string
		wd   string
		p    *protocol.Policy
		ok   bool
	}{
		{"from the workspace", "/w", settings, true},
		{"from another folder", "/x", settings, false},
		{"no policy", "/w", nil, false},
		{"a root", "/w", &protocol.Policy{Jail: true, Roots: []string{"/r"}}, false},
		{"a read-only root", "/w", &protocol.Policy{Jail: true, ReadOnlyRoots: []string{"/r"}}, false},
	} {
		plan := runpath.Plan{Workspace: c.wd}
		if got := planTarget(&plan, local, c.p); got != c.ok {
			t.Errorf("local, %s: %v", c.name, got)
		} else if got && (plan.Socket != local.Folder.SocketPath() || plan.Key != local.Folder.KeyPath() || plan.Header != "" || plan.URL != "") {
			t.Errorf("local, %s: %+v", c.name, plan)
		}
	}

	tg, err := client.ParseTarget("ssh://h/opt/vis-agent")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--session", "s", "--workspace", "/there"}
	mux := &remotemux.Config{Dir: "/v/sandbox/remote"}
	plan := runpath.Plan{Workspace: "/anywhere"}
	if !planTarget(&plan, client.OpenRemote(tg, m, args, mux), nil) {
		t.Fatal("a remote session through its multiplexer: no plan")
	}
	paths := remotemux.PathsOf(mux.Dir, tg.URL)
	header, _ := remotemux.Header(args)
	if plan.Socket != paths.Socket || plan.Key != paths.Key || plan.Header+"\n" != string(header) || plan.URL != tg.URL ||
		strings.Contains(plan.Header, "\n") {
		t.Errorf("remote: %+v", plan)
	}
	if planTarget(&runpath.Plan{}, client.OpenRemote(tg, m, args, nil), nil) {
		t.Error("a plan for a remote session without a multiplexer (VIS_SANDBOX_MUX=0)")
	}
	long := &remotemux.Config{Dir: "/" + strings.Repeat("d", session.MaxSocketPath)}
	if planTarget(&runpath.Plan{}, client.OpenRemote(tg, m, args, long), nil) {
		t.Error("a plan for a multiplexer's socket path runpath.c cannot connect to")
	}
}
