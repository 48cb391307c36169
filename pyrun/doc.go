// Package pyrun is the python-run planner: it runs `vis-agent python` as
// python does. It parses the command line as CPython's getopt does
// (Parse), finds and loads the CPython (LoadRuntime), decides which
// environment, start-up hook and program environment a run uses
// (NewPlan, over packages.Resolve and the settings), saves that decision
// for the fast path before Go starts (fastpath.go), refuses or proxies
// the network (--no-network, --allow-host), and hands over to CPython
// (Main) or to the pinned uv (`vis-agent python uv`).
//
// A sandbox session's child uses NewPlan too, so its Python starts in the
// environment `vis-agent python -c` would use in its workspace.
package pyrun
