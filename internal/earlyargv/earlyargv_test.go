package earlyargv_test

import (
	"slices"
	"testing"

	"github.com/vis-agent/vis-agent/internal/earlyargv"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

const exe = "/opt/vis agent/vis-agent"

// TestHostCommandLine: the host's constructor finds, in the command line
// protocol.HostArgs builds, the session folder, whether the policy has
// the jail (it reads only the JSON's prefix: a reordered Policy fails here)
// and whether its network is an allow list.
func TestHostCommandLine(t *testing.T) {
	dir := "/home/u/.vis/sandbox/sessions/default-0123 x"
	for _, p := range []protocol.Policy{
		{Jail: true, Network: true, MaxThreads: 64, MemoryMB: 4096, Roots: []string{"/data"}},
		{Jail: true, Network: true, Hosts: &protocol.Hosts{Allow: []string{"pypi.org"}, Deny: []string{"x.test"}}, MaxThreads: 64},
		{Jail: false, Network: true, Hosts: &protocol.Hosts{Allow: []string{}}},
		{Jail: true},
		{Jail: false, Network: true},
		{},
	} {
		argv := append([]string{exe}, protocol.HostArgs(dir, &p)...)
		if !earlyargv.SandboxCommand(argv, "host") || earlyargv.SandboxCommand(argv, "child") {
			t.Fatalf("%q: not read as a host's command line", argv)
		}
		if got, ok := earlyargv.Arg(argv, "--dir"); !ok || got != dir {
			t.Errorf("%q: --dir read as %q, %v", argv, got, ok)
		}
		policy, ok := earlyargv.Arg(argv, "--policy")
		if !ok {
			t.Fatalf("%q: no --policy read", argv)
		}
		if got := earlyargv.PolicyJailed(policy); got != p.Jail {
			t.Errorf("policy %s: the constructor reads jail %v, Go wrote %v", policy, got, p.Jail)
		}
		if got := earlyargv.PolicyProxied(policy); got != p.Proxied() {
			t.Errorf("policy %s: the constructor reads an allow list %v, Go wrote %v", policy, got, p.Proxied())
		}
		if earlyargv.LoadsPython(argv) || earlyargv.PythonCommand(argv) || earlyargv.DropPrivilegesWanted(argv) {
			t.Errorf("%q: a host's command line read as one that loads Python or drops privileges", argv)
		}
	}
	argv := append([]string{exe}, protocol.HostArgs(dir, nil)...)
	if _, ok := earlyargv.Arg(argv, "--policy"); ok {
		t.Errorf("%q: a --policy read where Go wrote none", argv)
	}
}

// TestChildCommandLine: the early child the host's constructor starts has
// the command line protocol.ChildArgs builds, and the jail's and pyembed's
// constructors read that line as Go means it.
func TestChildCommandLine(t *testing.T) {
	dir := "/s/default-0123"
	for _, drop := range []bool{true, false} {
		want := append([]string{exe}, protocol.ChildArgs(dir, drop, false)...)
		if got := earlyargv.ChildArgs(exe, dir, drop, false); !slices.Equal(got, want) {
			t.Errorf("drop privileges %v: the host's constructor starts %q, Go starts %q", drop, got, want)
		}
		if !earlyargv.SandboxCommand(want, "child") {
			t.Errorf("%q: not read as a child's command line", want)
		}
		if got := earlyargv.DropPrivilegesWanted(want); got != drop {
			t.Errorf("%q: the jail's constructor drops privileges: %v", want, got)
		}
		if !earlyargv.LoadsPython(want) || earlyargv.LoadsNoLibrary(want) {
			t.Errorf("%q: the prefetch does not load libpython for a child", want)
		}
		if earlyargv.PythonCommand(want) {
			t.Errorf("%q: read as `vis-agent python`", want)
		}
		if earlyargv.OwnNetworkWanted(want) {
			t.Errorf("%q: the jail's constructor makes a network namespace", want)
		}
		proxied := append([]string{exe}, protocol.ChildArgs(dir, drop, true)...)
		if got := earlyargv.ChildArgs(exe, dir, drop, true); !slices.Equal(got, proxied) {
			t.Errorf("drop privileges %v, an allow list: the host's constructor starts %q, Go starts %q", drop, got, proxied)
		}
		if !earlyargv.OwnNetworkWanted(proxied) || earlyargv.DropPrivilegesWanted(proxied) != drop {
			t.Errorf("%q: the jail's constructor makes no network namespace, or drops privileges: %v", proxied, !drop)
		}
	}
}

// TestOwnNetworkEnv: protocol.NetworkEnv=1 gives any command a network
// namespace (the program of `vis-agent python --allow-host`), under the
// name the jail's constructor reads.
func TestOwnNetworkEnv(t *testing.T) {
	argv := []string{exe, "python", "-c", "pass"}
	if earlyargv.OwnNetworkWanted(argv) {
		t.Fatalf("%q: a network namespace without %s", argv, protocol.NetworkEnv)
	}
	t.Setenv(protocol.NetworkEnv, "1")
	if !earlyargv.OwnNetworkWanted(argv) {
		t.Errorf("%q with %s=1: no network namespace", argv, protocol.NetworkEnv)
	}
}

// TestPythonCommandLine: `vis-agent python` lines, as people type them.
func TestPythonCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		noLibrary bool
	}{
		{[]string{"python", "-c", "pass"}, false},
		{[]string{"python"}, false},
		{[]string{"python", "uv", "sync"}, true},
		{[]string{"python", "--env", "e", "--no-network", "uv", "lock"}, true},
		{[]string{"python", "uv", "pip", "list"}, false},
		{[]string{"python", "--shared", "uv", "sync"}, false},
	} {
		argv := append([]string{exe}, tc.args...)
		if !earlyargv.PythonCommand(argv) || !earlyargv.LoadsPython(argv) {
			t.Errorf("%q: not read as a python run", argv)
		}
		if got := earlyargv.LoadsNoLibrary(argv); got != tc.noLibrary {
			t.Errorf("%q: predicted to load no library: %v, want %v", argv, got, tc.noLibrary)
		}
		if earlyargv.DropPrivilegesWanted(append(argv, protocol.DropPrivilegesFlag)) {
			t.Errorf("%q: the jail's constructor acts on a python run", argv)
		}
	}
}

// TestDescriptors: C and Go number a child's descriptors alike.
func TestDescriptors(t *testing.T) {
	c := []int{earlyargv.LinkFD, earlyargv.StacksFD, earlyargv.CallsFD}
	g := []int{protocol.LinkFD, protocol.StacksFD, protocol.CallsFD}
	if !slices.Equal(c, g) {
		t.Errorf("link, stacks and calls descriptors: C %v, Go %v", c, g)
	}
	if earlyargv.HostReadyFD != protocol.HostReadyFD {
		t.Errorf("a host's ready pipe: C %d, Go %d", earlyargv.HostReadyFD, protocol.HostReadyFD)
	}
}
