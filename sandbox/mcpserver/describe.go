package mcpserver

import (
	"fmt"
	"strings"
)

// boundNames are the modules and names every block finds bound (the
// driver's AUTO_IMPORTS and AUTO_NAMES; a test keeps the two in step).
var boundNames = []string{"json", "re", "os", "sys", "math", "time", "datetime", "pathlib", "collections", "textwrap",
	"base64", "hashlib", "shlex", "glob", "Path", "Counter"}

// sessionFunctions are the functions bound in every block besides the
// modules, each with what it does, for the python tool's description.
var sessionFunctions = []string{
	"attach(data, filename=None) stores bytes, a str, a Path or a matplotlib figure (PNG, shown to you)",
	"list_attachments(), get_attachment(id_or_filename), read_attachment(id_or_filename), show_attachment(id_or_filename)",
	"shell(cmd, timeout=300, wait=10) runs a command, returning its handle (status, exit, out, err) when it ends or after wait seconds, still running (.wait() waits on)",
	"cat(path), grep(pattern, path), patch(path, old, new)",
	"propose(message) attaches your workspace's change against git's HEAD as proposal.patch for the user to apply",
	"install(\"pandas\", \"numpy>=2\") adds packages, kept across restarts",
	"reload(\"pkg\") imports a package you edited afresh (output says when an imported module changed on disk)",
	"apropos(pattern), doc(name_or_obj)",
	"read_session(n=20) shows the session's latest blocks, the REPL's too",
}

// instructions is what the server tells a client about itself.
func (sv *server) instructions() string {
	return fmt.Sprintf("A persistent Python session (%q, workspace %s): what one python call defines is there in the next, "+
		"and survives restarts through a snapshot. Use python to run code, defs to see what the session holds, "+
		"list_attachments and read_attachment (or the vis-attachment:// resources) for the files its blocks attached. %s",
		sv.home.Meta.Name, sv.home.Meta.Workspace, sv.networkDescription())
}

// accessDescription says, for a model, what the session's jail allows.
func (sv *server) accessDescription() string {
	p := sv.policy
	var b strings.Builder
	if p.Jail {
		b.WriteString("Jailed by the kernel: files only in the workspace and a private temp folder")
		if len(p.Roots) > 0 {
			b.WriteString(", " + strings.Join(p.Roots, ", "))
		}
		b.WriteString("; Python's packages")
		if len(p.ReadOnlyRoots) > 0 {
			b.WriteString(" and " + strings.Join(p.ReadOnlyRoots, ", "))
		}
		b.WriteString(" and the system's programs read-only; subprocess, multiprocessing and ctypes run inside the same jail " +
			"(the workspace's .git is read-only: leave commits to the user, propose() hands your change over). ")
	} else {
		b.WriteString("Not jailed: blocks have the user's permissions. ")
	}
	b.WriteString(sv.networkDescription())
	if p.MaxThreads > 0 {
		fmt.Fprintf(&b, " At most %d threads and processes.", p.MaxThreads)
	}
	if p.MemoryMB > 0 {
		fmt.Fprintf(&b, " Memory cap %d MB.", p.MemoryMB)
	}
	return b.String()
}

// networkDescription says, for a model, what the session's network
// reaches, and under an allow list how the user widens it.
func (sv *server) networkDescription() string {
	p := sv.policy
	switch {
	case !p.Network:
		return "Network off."
	case !p.Proxied():
		return "Network on."
	}
	reach := "no host"
	if len(p.Hosts.Allow) > 0 {
		reach = "only " + strings.Join(p.Hosts.Allow, ", ")
	}
	if len(p.Hosts.Deny) > 0 {
		reach += " (never " + strings.Join(p.Hosts.Deny, ", ") + ")"
	}
	return "Network: " + reach + ", through a proxy (HTTP_PROXY is set; pip, requests, curl and git use it); others get HTTP 403. " +
		"Only the user can allow another host (--allow-host HOST or sandbox.allow_hosts in ~/.vis/config.toml): ask them."
}

// echoText says what a block's output is, with or without the echo of
// its trailing expression.
func (sv *server) echoText() string {
	if sv.echo {
		return "Output: what the block prints, then the repr of a last-line expression (not None; cut to 4 KB), as a notebook's Out."
	}
	return "Output: what the block prints; a last-line expression is NOT shown: print() it."
}

// pythonDescription is the python tool's description, written for a model.
func (sv *server) pythonDescription() string {
	return strings.Join([]string{
		"Run Python in a persistent session: variables, functions and imports stay for the next call, and through a snapshot " +
			"across restarts (restart_session, a crash, idle): the next result then begins with \"[Sandbox restarted]\" saying what came back.",
		sv.echoText() + fmt.Sprintf(" Results keep %d characters; a longer one says what was cut and which attachment holds it all.", sv.maxOutput),
		"Every block has session, defs(), " + strings.Join(boundNames, " ") + ", top-level await (no stdin), and: " +
			strings.Join(sessionFunctions, "; ") + ". Attachments are also resources " + uriScheme + "://SESSION/FILENAME.",
		"Errors show Python's message, line and caret; unbalanced quotes or brackets are repaired first, with a note.",
		"Working folder: the workspace, " + sv.home.Meta.Workspace + ". " + sv.accessDescription(),
		"timeout_s: default 300 (3..2100), then KeyboardInterrupt, output kept. Clients often stop waiting sooner: raise " +
			"MCP_TOOL_TIMEOUT (Claude Code, ms) or tool_timeout_sec (Codex), or split the work.",
	}, "\n\n")
}

const defsDescription = `List the session's helpers (signature, block, size, docstring) and variables (type, size, saved or why not), never values, as defs() in a block.`

const restartDescription = `Restart the session's Python process from its snapshot; the next result begins with a "[Sandbox restarted]" notice.`

const rewindDescription = `Bring the session's state back to after an earlier block (to: block N, as in tracebacks; back: N blocks, default 1). Files are not rewound; a rewind to a later block undoes it.`

const interruptDescription = `Send KeyboardInterrupt to your running block (or withdraw your waiting one); its python call returns with what it printed.`

func (sv *server) listDescription() string {
	return `List the session's attachments, newest first: filename, version, kind, type, size, block, id, resource URI. Cut outputs are kept as ` + outputFilename + `.`
}

func (sv *server) readDescription() string {
	return `Read an attachment by id or filename (version N; -1 latest). Text pages by characters (offset, limit) or lines (offset_lines, limit_lines); images come back as images; other bytes are described.`
}
