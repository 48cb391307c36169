package host

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// magicHint is one line for a block line written for a shell or IPython
// (`!ls`, `%pip install x`, `%cd d`) that Python refused, naming what does
// it in the session; "" for another line.
func magicHint(line string) string {
	t := strings.TrimSpace(line)
	if len(t) < 2 || t[0] != '!' && t[0] != '%' {
		return ""
	}
	cmd := strings.TrimSpace(strings.TrimLeft(t, "!%"))
	fields := strings.Fields(cmd)
	switch {
	case len(fields) >= 2 && (fields[0] == "pip" || fields[0] == "uv" || fields[0] == "conda") && fields[1] == "install" ||
		len(fields) >= 3 && fields[0] == "uv" && fields[1] == "pip" && fields[2] == "install":
		var pkgs []string
		for _, f := range fields[2:] {
			if f != "install" && !strings.HasPrefix(f, "-") {
				pkgs = append(pkgs, strconv.Quote(f))
			}
		}
		return "Hint: this is Python, not a shell: install(" + strings.Join(pkgs, ", ") + ") installs packages into the session."
	case len(fields) >= 1 && t[0] == '%' && fields[0] == "cd":
		return "Hint: this is Python, not IPython: os.chdir(" + strconv.Quote(strings.TrimSpace(strings.TrimPrefix(cmd, "cd"))) + ") changes the folder."
	case t[0] == '%':
		return "Hint: IPython's % commands do not work here; write Python (shell(\"…\") runs a command)."
	}
	return "Hint: this is Python, not a shell: shell(" + strconv.Quote(cmd) + ") runs the command and returns its output."
}

// resultHints add to the error of a block run under policy a line that
// names the way on: shell() for a refused process, the allow list and
// how the user widens it for a refused or failed connection.
func resultHints(res *protocol.Result, policy protocol.Policy) {
	e := res.Error
	if e == nil {
		return
	}
	switch {
	case e.Type == "PermissionError" && strings.Contains(e.Message, "(no new processes)"):
		e.Traceback += "Hint: shell(\"cmd\") runs a command for the session (confined like it) and returns its output.\n"
	case e.Type == "BlockingIOError" && strings.Contains(e.Message, "Resource temporarily unavailable") && policy.MaxThreads > 0:
		e.Traceback += fmt.Sprintf("Hint: the session's processes and threads reached its cap (%d, sandbox.max_threads): end some, or raise the setting.\n", policy.MaxThreads)
	case policy.Proxied() && networkFailure(e.Message+"\n"+e.Traceback):
		e.Traceback += networkHint(policy) + "\n"
	}
}

// refusalHint names, under a block's error, the jail's refusal it began
// with when the error is another one raised from it: a library that calls
// into what the jail refuses as it imports often reads the refusal as
// something else ("the install you are using seems to be broken"), and
// the refusal itself is far up in the chained traceback.
func refusalHint(res *protocol.Result) {
	e := res.Error
	if e == nil || strings.Contains(e.Message, "refused by the sandbox's jail") {
		return
	}
	for _, line := range strings.Split(e.Traceback, "\n") {
		if strings.Contains(line, "refused by the sandbox's jail") {
			e.Traceback += "Hint: the cause is the jail: " + strings.TrimSpace(line) + " (in the chained error above).\n"
			return
		}
	}
}

// gitReadOnly is the hint of a shell() command that failed on the .git
// the jail keeps read-only.
const gitReadOnly = "the workspace's .git is read-only in the jail: leave commits to the user; propose() attaches your change as a patch"

// runsGit reports whether a command line runs git: the word git between
// blanks or the shell's separators. (No regexp: a package variable's
// compile would run in every vis-agent python start, which links this
// package.)
func runsGit(cmd string) bool {
	return slices.Contains(strings.FieldsFunc(cmd, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()", r) }), "git")
}

// gitHint adds gitReadOnly to the state of a command that ended with an
// error where a .git was read-only to it, when it ran git or its errors
// name a read-only file in a .git (git add's index.lock; git stash
// fails with no message at all).
func gitHint(st tools.ShellState) tools.ShellState {
	if st.Exit == nil || *st.Exit == 0 || st.Kernel == nil {
		return st
	}
	for _, p := range st.Kernel.ReadOnly {
		if filepath.Base(p) == ".git" && (runsGit(st.Command) ||
			strings.Contains(st.Err, ".git") && strings.Contains(st.Err, "Read-only file system")) {
			st.Hint = gitReadOnly
			break
		}
	}
	return st
}

// networkFailures are what Python, requests, pip and PySocks say of a
// connection that the proxy refused or that went around it (the
// namespace has no route, no resolver).
var networkFailures = []string{
	"is not in the session's allow list", "a local or private address", "Tunnel connection failed", "Cannot connect to proxy", "not allowed by ruleset",
	"Network is unreachable", "Temporary failure in name resolution", "Name or service not known",
	"No address associated with hostname", "Connection refused",
}

func networkFailure(text string) bool {
	for _, f := range networkFailures {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// networkHint says what an allow list lets through, how, and how the
// user adds a host.
func networkHint(policy protocol.Policy) string {
	reach := "no host"
	if len(policy.Hosts.Allow) > 0 {
		reach = "only " + strings.Join(policy.Hosts.Allow, ", ")
	}
	return "Hint: this session's network reaches " + reach + ", through the proxy at HTTP_PROXY (urllib, requests, pip, curl and git use it); " +
		"the user allows another host with --allow-host HOST or " + allowSetting + " in ~/.vis/config.toml (or opens the network with --network on)."
}
