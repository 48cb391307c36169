package importpolicy

// allowed is the import policy: every package of the module, with the
// packages of the module it may import directly (its tests' imports are
// free). A package missing here, or an import missing from its line, fails
// TestPolicy: adding one is a decision, taken here, with the rules below
// checked on it. Lower layers come first.
var allowed = map[string][]string{
	// The bottom: libraries of internal/ that import nothing outside it.
	"internal/paths":      {},
	"internal/fsutil":     {},
	"internal/headbuf":    {},
	"internal/termtext":   {},
	"internal/tomlbound":  {},
	"internal/detached":   {},
	"internal/atomicfile": {"internal/fsutil"},
	"internal/iostreams":  {"internal/paths"},
	"internal/config":     {"internal/fsutil", "internal/paths", "internal/tomlbound"},

	// The protocol every session process and client speaks: no module
	// package, so that every peer can import it.
	"sandbox/protocol": {},

	// Pure-Go libraries of the sandbox and the python run.
	"sandbox/netpolicy":   {},
	"sandbox/realpath":    {},
	"sandbox/roots":       {"sandbox/realpath"},
	"sandbox/proxy":       {"sandbox/netpolicy"},
	"sandbox/repair":      {"sandbox/protocol"},
	"sandbox/check":       {"internal/tomlbound", "sandbox/protocol", "sandbox/repair"},
	"sandbox/install":     {"internal/headbuf"},
	"sandbox/journal":     {"sandbox/protocol"},
	"sandbox/attachments": {"internal/fsutil", "internal/headbuf"},
	"sandbox/session":     {"internal/atomicfile", "internal/fsutil", "sandbox/protocol"},
	"sandbox/transfer":    {"internal/fsutil", "sandbox/attachments", "sandbox/realpath", "sandbox/session"},
	"sandbox/jail/grant":  {"internal/config", "sandbox/netpolicy", "sandbox/protocol", "sandbox/realpath", "sandbox/roots"},
	"pyembed/findpython":  {"internal/atomicfile", "internal/fsutil", "internal/iostreams", "internal/paths"},
	"packages":            {"internal/atomicfile", "internal/fsutil", "internal/tomlbound", "pyembed/findpython"},
	"uvwrap":              {"internal/atomicfile", "internal/fsutil", "internal/headbuf", "internal/iostreams", "internal/paths"},

	// The fast paths' plan files, written in Go and read in C before Go
	// starts.
	"internal/plan": {"internal/atomicfile"},

	// The loader: dlopen and start CPython, knowing no policy.
	"pyembed/early": {},
	"pyembed":       {"internal/atomicfile", "internal/plan", "pyembed/early", "pyembed/findpython"},

	// The session's processes and the kernel layer.
	"sandbox/jail/audit": {"pyembed/findpython"},
	"sandbox/jail":       {"internal/fsutil", "sandbox/protocol", "sandbox/realpath", "sandbox/roots"},
	"sandbox/hostcalls":  {"sandbox/attachments", "sandbox/check", "sandbox/install", "sandbox/journal", "sandbox/protocol", "sandbox/repair", "sandbox/tools"},
	"sandbox/tools":      {"internal/fsutil", "sandbox/check", "sandbox/jail", "sandbox/protocol", "sandbox/proxy", "sandbox/realpath"},
	"sandbox/host": {
		"internal/atomicfile", "internal/config", "internal/fsutil", "internal/headbuf", "internal/iostreams",
		"pyembed/findpython", "sandbox/attachments", "sandbox/check", "sandbox/hostcalls", "sandbox/install",
		"sandbox/jail", "sandbox/journal", "sandbox/netpolicy", "sandbox/protocol", "sandbox/proxy", "sandbox/realpath", "sandbox/repair",
		"sandbox/session", "sandbox/tools", "uvwrap",
	},
	"sandbox/child": {
		"internal/atomicfile", "internal/config", "internal/iostreams", "packages", "pyembed", "pyrun",
		"sandbox/jail", "sandbox/jail/audit", "sandbox/protocol", "sandbox/proxy", "sandbox/session",
	},
	// The python-run planner, `vis-agent python`.
	"pyrun": {
		"internal/atomicfile", "internal/config", "internal/iostreams", "internal/paths", "packages", "pyembed",
		"pyembed/findpython", "sandbox/jail", "sandbox/jail/audit", "sandbox/netpolicy", "sandbox/protocol",
		"sandbox/proxy", "uvwrap",
	},
	// Whether a block compiles, asked of the in-process CPython.
	"sandbox/compilecheck": {"pyembed", "pyembed/findpython", "sandbox/protocol", "sandbox/repair"},

	// The one door, and the front ends behind it.
	"sandbox/client/runpath": {"internal/plan"},
	"sandbox/connect":        {"sandbox/client", "sandbox/protocol"},
	"sandbox/remotemux":      {"internal/detached", "sandbox/protocol", "sandbox/session"},
	"sandbox/client": {
		"internal/detached", "internal/fsutil", "internal/headbuf", "internal/paths", "sandbox/attachments",
		"sandbox/journal", "sandbox/protocol", "sandbox/remotemux", "sandbox/session", "sandbox/transfer",
	},
	"sandbox/mcpserver": {"sandbox/client", "sandbox/install", "sandbox/protocol"},
	"tui":               {"internal/atomicfile", "internal/termtext", "sandbox/client", "sandbox/protocol"},

	// The command tree: the root (`vis-agent python`, runtime, config),
	// the user's sandbox commands, the hidden process commands, and what
	// they share.
	"cli/cmdutil": {
		"internal/config", "internal/iostreams", "internal/termtext", "packages", "sandbox/client",
		"sandbox/jail/grant", "sandbox/protocol", "sandbox/remotemux",
	},
	"cli/sandbox": {
		"cli/cmdutil", "internal/atomicfile", "internal/config", "internal/fsutil", "internal/termtext", "pyrun",
		"sandbox/check", "sandbox/client", "sandbox/client/runpath", "sandbox/compilecheck",
		"sandbox/mcpserver", "sandbox/protocol", "sandbox/remotemux", "sandbox/repair", "sandbox/tools", "tui",
	},
	"cli/proc": {
		"cli/cmdutil", "sandbox/child", "sandbox/client", "sandbox/connect", "sandbox/host", "sandbox/jail",
		"sandbox/protocol", "sandbox/remotemux", "sandbox/session",
	},
	"cli": {
		"cli/cmdutil", "cli/proc", "cli/sandbox", "internal/iostreams", "internal/termtext", "packages",
		"pyembed/findpython", "pyrun", "uvwrap",
	},
	"cmd/vis-agent": {"cli"},

	// Tests as packages: test support, the C matchers' test bridge, the
	// policy itself.
	"internal/testing/testguard": {},
	"internal/testing/clitest":   {"cli/cmdutil", "internal/iostreams"},
	"internal/testing/testenv":   {"pyembed/findpython"},
	"internal/testing/testwheel": {"internal/testing/testenv"},
	"sandbox/repair/repairtest":  {"internal/testing/testenv", "internal/testing/testwheel"},
	"internal/earlyargv":         {},
	"internal/importpolicy":      {},

	// `make bench`: programs timing whole commands.
	"bench/cmdbench":     {"internal/testing/testenv", "internal/testing/testwheel"},
	"bench/mcpbench":     {"internal/testing/testenv", "sandbox/client", "sandbox/protocol", "sandbox/session"},
	"bench/sandboxbench": {"internal/paths", "internal/testing/testenv", "sandbox/client", "sandbox/protocol", "sandbox/remotemux", "sandbox/session"},
}

// Groups the rules name.
var (
	// bottom are the libraries of internal/ every layer may use.
	bottom = []string{
		"internal/paths", "internal/config", "internal/fsutil", "internal/atomicfile", "internal/headbuf",
		"internal/termtext", "internal/iostreams", "internal/tomlbound", "internal/detached",
	}
	// testSupport is code for tests only.
	testSupport = []string{"internal/testing/testenv", "internal/testing/testwheel", "internal/testing/testguard", "sandbox/repair/repairtest", "internal/testing/clitest"}
	// benchPrograms time the built binary: they drive it as tests do.
	benchPrograms = []string{"bench/cmdbench", "bench/mcpbench", "bench/sandboxbench"}
	// frontEnds are the programs people and agents drive a session with.
	frontEnds = []string{"cli", "cli/sandbox", "cli/cmdutil", "tui", "sandbox/mcpserver"}
	// sessionInternals are the host, the child, their jail and the
	// embedded interpreter: what runs a session, never what talks to one.
	sessionInternals = []string{"sandbox/host", "sandbox/child", "sandbox/jail", "sandbox/jail/audit", "pyembed", "pyembed/early"}
	// loader is pyembed, the loader, with its start-up package and the
	// pure discovery under it; policyPackages decide what a session may do.
	loader         = []string{"pyembed", "pyembed/"}
	policyPackages = []string{"cli", "cli/", "pyrun", "tui", "packages", "uvwrap", "internal/config", "sandbox/"}
)

// rules are what the policy must keep, whatever its lines say: checked on
// every line of allowed and on the tree.
var rules = []rule{{
	name: "protocol is at the bottom: it imports no package of the module",
	from: []string{"sandbox/protocol"}, to: []string{"*"},
}, {
	name: "the bottom libraries of internal/ import nothing outside internal/",
	from: bottom, to: []string{"*"}, except: []string{"internal/"},
}, {
	name: "no production code imports test support",
	from: []string{"*"}, to: testSupport, fromExcept: append(append([]string{"internal/importpolicy"}, testSupport...), benchPrograms...),
}, {
	name: "the binary links no test support", reach: true,
	from: []string{"cmd/vis-agent"}, to: testSupport,
}, {
	name: "the loader knows no policy: nothing under pyembed/ reaches sandbox/, cli, pyrun, tui, packages, uvwrap or internal/config", reach: true,
	from: loader, to: policyPackages,
}, {
	name: "only cmd/vis-agent imports cli",
	from: []string{"*"}, fromExcept: []string{"cmd/vis-agent"}, to: []string{"cli"},
}, {
	name: "front ends reach sessions through sandbox/client: not the journal, the attachments store, the session folders or their transfer (the client re-exports the names they use)",
	from: frontEnds, to: []string{"sandbox/journal", "sandbox/attachments", "sandbox/session", "sandbox/transfer"},
}, {
	name: "front ends and the door reach no session process (so they build without cgo)", reach: true,
	from: []string{"tui", "sandbox/mcpserver", "sandbox/client"}, to: sessionInternals,
}, {
	name: "the host imports no child, planner, loader or front end", reach: true,
	from: []string{"sandbox/host"},
	to:   []string{"sandbox/child", "pyrun", "pyembed", "pyembed/early", "cli", "cli/", "tui", "sandbox/mcpserver", "sandbox/client"},
}, {
	name: "the planner (pyrun) knows no command tree, front end or session process", reach: true,
	from: []string{"pyrun"},
	to:   []string{"cli", "cli/", "tui", "sandbox/client", "sandbox/mcpserver", "sandbox/host", "sandbox/child", "sandbox/session"},
}}
