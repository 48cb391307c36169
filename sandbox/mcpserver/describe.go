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
	"attach(data, filename=None, kind=None, media_type=None, commentable=False) stores bytes, a str or a pathlib.Path as an attachment (the same filename again makes a new version) and returns its descriptor",
	"list_attachments(), get_attachment(id_or_filename, version=None), read_attachment(id_or_filename, version=None, text=False) and show_attachment(id_or_filename, version=None) list, describe, read and preview them",
	"shell(cmd, timeout=300, cwd=None) runs a command and returns a handle (status, exit, out, err, wait(), logs(n), stop())",
	"cat(path, offset=0, limit=None) shows numbered lines, grep(pattern, path=\".\", glob=None) finds lines, patch(path, old, new) replaces one exact unique text and returns the diff",
	"install(\"pandas\", \"numpy>=2\") installs packages from the user's index into this session (they import at once and stay across restarts; a ModuleNotFoundError names the install() that brings the module; the install tool does the same)",
	"apropos(pattern) lists the session's functions and tools, doc(name_or_obj) shows a signature and docstring",
	"read_session(n=20) shows the session's latest blocks, also those the person at the REPL ran",
}

// instructions is what the server tells a client about itself.
func (sv *server) instructions() string {
	return fmt.Sprintf("A persistent Python session (%q, workspace %s): what one python call defines is there in the next, "+
		"and survives restarts through a snapshot. Use python to run code, defs to see what the session holds, "+
		"list_attachments and read_attachment (or the vis-attachment:// resources) for the files its blocks attached.",
		sv.s.Meta.Name, sv.s.Meta.Workspace)
}

// accessDescription says, for a model, what the session's jail allows.
func (sv *server) accessDescription() string {
	p := sv.policy
	var b strings.Builder
	if p.Jail {
		b.WriteString("The session is jailed (enforced by the kernel, not only by Python): blocks may read and write files " +
			"only in the workspace and a private temporary folder")
		if len(p.Roots) > 0 {
			b.WriteString(", and in " + strings.Join(p.Roots, ", "))
		}
		b.WriteString("; they may read Python's installation and packages")
		if len(p.ReadOnlyRoots) > 0 {
			b.WriteString(" and " + strings.Join(p.ReadOnlyRoots, ", "))
		}
		b.WriteString(". Starting processes (subprocess, os.system), loading libraries with ctypes and signalling other " +
			"processes are refused with PermissionError. ")
	} else {
		b.WriteString("The session is not jailed: blocks run with the permissions of the user who started this server " +
			"(files, processes). ")
	}
	if p.Proxied() {
		fmt.Fprintf(&b, "The network reaches only these hosts, through a proxy (HTTP_PROXY is set; pip, requests, urllib, curl and git use it): %s; "+
			"others get HTTP 403, and sockets that bypass the proxy reach nothing.", strings.TrimPrefix(p.NetworkText(), "allow "))
	} else if p.Network {
		b.WriteString("The network is available.")
	} else {
		b.WriteString("The network is off: sockets (but unix ones) and name lookups are refused.")
	}
	if p.MaxThreads > 0 {
		fmt.Fprintf(&b, " At most %d threads.", p.MaxThreads)
	}
	if p.MemoryMB > 0 {
		fmt.Fprintf(&b, " Memory is capped at %d MB of address space.", p.MemoryMB)
	}
	b.WriteString(" session.access in a block says what is in force.")
	return b.String()
}

// pythonDescription is the python tool's description, written for a model.
func (sv *server) pythonDescription() string {
	return strings.Join([]string{
		"Run a block of Python code in a persistent session and return what it printed.",
		"",
		"State persists: variables, functions, classes and imports from one call are there in the next (the session is " +
			"one long-lived Python process). After every block the session is saved to a snapshot; when its process restarts " +
			"(restart_session, a crash, a block that would not stop, or after it sat idle) the snapshot is restored and the next " +
			"result begins with a \"[Sandbox restarted]\" notice listing what came back and what did not (values that cannot be " +
			"pickled, such as open files, sockets or generators, are lost).",
		"",
		"Output: print() is the only channel. A trailing expression is NOT shown: write print(x), not x. Both stdout and " +
			fmt.Sprintf("stderr are returned. A result carries at most %d characters of output (the first and last parts, with a "+
				"note saying how much was left out); the whole output is then kept as a version of the attachment %s, which "+
				"read_attachment pages through. Print summaries rather than whole large values.", sv.maxOutput, outputFilename),
		"",
		"Bound in every block: session (its name, workspace, python version and access), defs() (the helpers and variables " +
			"this session defined; defs(\"name\") shows one's source), and the modules and names " + strings.Join(boundNames, ", ") +
			". Top-level await works. input() raises EOFError: there is no standard input.",
		"",
		"Functions bound in every block (no import; a block may shadow one, and it comes back in the next): " +
			strings.Join(sessionFunctions, "; ") + ". Attachments are how a block hands you files and images: " +
			"list_attachments and read_attachment (images come back as images) read them here, and each is a resource " +
			uriScheme + "://" + sv.s.Meta.Name + "/FILENAME (?version=N for an older version).",
		"",
		"Errors come back as Python's message with the failing line and a caret. A block with an unbalanced quote or bracket, " +
			"or literal braces in an f-string, is repaired before it runs, with a note saying what was changed.",
		"",
		"Files and access: the working directory is the workspace, " + sv.s.Meta.Workspace + ". " + sv.accessDescription(),
		"",
		"Time: timeout_s defaults to 300 seconds (kept within 3..2100). On timeout the block gets KeyboardInterrupt; what it " +
			"printed is kept. While a block runs longer than a second the server sends progress notifications, and cancelling " +
			"the call interrupts the block. Your MCP client may stop waiting sooner than the block's timeout (many wait 60 s for " +
			"a tool): to run longer blocks raise the client's tool-call limit (Claude Code: the MCP_TOOL_TIMEOUT environment " +
			"variable, in milliseconds; Codex: tool_timeout_sec in the server's [mcp_servers.NAME] table of ~/.codex/config.toml), " +
			"or split the work into shorter blocks.",
	}, "\n")
}

const defsDescription = `List what the persistent Python session holds: the helpers (functions, classes) and variables its blocks defined, never their values.
Rows show a helper's call signature, the block that defined it, its size and the first line of its docstring; a variable's type and size and whether the snapshot saved it.
With name: that helper's source (or the variable's description); details adds what it depends on. pattern filters names by a regular expression; limit and offset page through long lists.
The same listing is defs() inside a python block.`

const restartDescription = `Restart the persistent Python session's process: its state is saved to the snapshot, the process stops, and the next python call runs in a new process restored from that snapshot.
The next result begins with a "[Sandbox restarted]" notice listing what came back and what did not (unpicklable values are lost).
Use it when the process is in a bad state (memory, threads, patched modules). While a block runs it refuses unless force is set, which kills that block.
fresh: true discards the snapshot, so the session starts empty; drop: ["name", ...] leaves those names out of the restored session and its snapshot (a value or helper that should not come back). Either starts the new process at once.`

const interruptDescription = `Interrupt the block running in the persistent Python session: it gets KeyboardInterrupt at its next Python instruction, and its python call returns with what it printed.
The session keeps its state. A block stuck in C code that does not stop is retired at its timeout and the session restored from its snapshot.`

func (sv *server) listDescription() string {
	return `List the attachments of the persistent Python session, newest first: every version of every file its blocks stored with attach() (and the whole output of python calls whose result was cut, as ` + outputFilename + `).
Each row: filename, version, kind, media type, size, the block that attached it, when, whether it takes comments, its id, and its resource URI (` + uriScheme + `://` + sv.s.Meta.Name + `/ID).
Read one with read_attachment; in a block, list_attachments() and read_attachment() do the same.`
}

func (sv *server) readDescription() string {
	return fmt.Sprintf(`Read an attachment of the persistent Python session, by id or filename (its latest version, or version N; -1 the latest, -2 the one before).
Text comes back as text, at most %d characters per call: offset and limit page through a longer one, and the result says where to read on. Images (PNG, JPEG, GIF, WebP up to 5 MiB) come back as images you can see. Other binary files are described (type and size); read their bytes in a python block with read_attachment(id).
The same attachment is the resource %s://%s/FILENAME or .../ID.`, sv.maxOutput, uriScheme, sv.s.Meta.Name)
}
