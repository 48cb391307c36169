package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// mcpClient is the SDK's client connected to `vis-agent sandbox mcp` for
// session name of sb, with the progress notifications it received.
type mcpClient struct {
	t        testing.TB
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress []string
	// listChanged counts notifications/resources/list_changed; updated
	// holds the URIs of notifications/resources/updated.
	listChanged int
	updated     []string
	// output is the python tool's output schema, once tools are listed:
	// every structured result must satisfy it.
	output *jsonschema.Resolved
}

func connectMCP(t testing.TB, sb *sandbox, args ...string) *mcpClient {
	t.Helper()
	return connectMCPCommand(t, sb.command(append([]string{"mcp", "--workspace", sb.ws}, args...)...))
}

// connectMCPCommand connects to the MCP server cmd runs.
func connectMCPCommand(t testing.TB, cmd *exec.Cmd) *mcpClient {
	t.Helper()
	c := &mcpClient{t: t}
	client := mcp.NewClient(&mcp.Implementation{Name: "vis-agent-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, req.Params.Message)
			c.mu.Unlock()
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			c.mu.Lock()
			c.listChanged++
			c.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			c.updated = append(c.updated, req.Params.URI)
			c.mu.Unlock()
		},
	})
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	// A bound on hangs, far above the ~ms it takes.
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("initialize took %s", took)
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	return c
}

// call calls tool and returns its text and structured content.
func (c *mcpClient) call(ctx context.Context, tool string, args map[string]any, progress bool) (string, map[string]any, bool, error) {
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if progress {
		p.SetProgressToken("p-" + tool)
	}
	res, err := c.cs.CallTool(ctx, p)
	if err != nil {
		return "", nil, false, err
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var structured map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &structured)
		if c.output != nil && tool == "python" {
			if err := c.output.Validate(structured); err != nil {
				c.t.Errorf("structured result against the output schema: %v\n%s", err, b)
			}
		}
	}
	return text.String(), structured, res.IsError, nil
}

// python runs code and requires isError to be wantErr.
func (c *mcpClient) python(code string, wantErr bool, extra ...any) (string, map[string]any) {
	c.t.Helper()
	args := map[string]any{"code": code}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	text, st, isErr, err := c.call(ctx, "python", args, true)
	if err != nil {
		c.t.Fatalf("python %q: %v", code, err)
	}
	if isErr != wantErr {
		c.t.Fatalf("python %q: isError %v, want %v\n%s", code, isErr, wantErr, text)
	}
	return text, st
}

// toolResult calls a tool and returns its text and isError.
func (c *mcpClient) toolResult(name string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	text, _, isErr, err := c.call(ctx, name, args, false)
	return text, isErr, err
}

func (c *mcpClient) tool(name string, args map[string]any) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	text, _, isErr, err := c.call(ctx, name, args, false)
	if err != nil || isErr {
		c.t.Fatalf("%s: %v %v\n%s", name, err, isErr, text)
	}
	return text
}

// TestMCPServer drives `vis-agent sandbox mcp` with the SDK's client over
// its standard input and output: initialize, the tools, state between
// calls, a repaired block, an error, capped output, a timeout with
// progress, a cancel, a restart with its notice, and stdin closing.
func TestMCPServer(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py, "VIS_ENV_IDLE_TTL_MS=60000")
	c := connectMCP(t, sb, "--session", "m", "--max-output", "2000")

	info := c.cs.InitializeResult().ServerInfo
	if info.Name != "vis-agent-sandbox" || info.Version == "" {
		t.Errorf("server info %+v", info)
	}
	tools, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "python" {
			contains(t, "python's description", tl.Description, "stay for the next call", "[Sandbox restarted]", "Jailed by the kernel", "Network: only pypi.org, files.pythonhosted.org, through a proxy",
				"repr of a last-line expression", "MCP_TOOL_TIMEOUT", "tool_timeout_sec", "defs()", "Counter", sb.ws,
				"attach(data", "matplotlib figure", "show_attachment", "shell(cmd", "wait=10", "still running", "patch(path", "apropos(", "doc(",
				"vis-attachment://SESSION/FILENAME", `install("pandas", "numpy>=2")`, "run inside the same jail")
		}
		readOnly := tl.Annotations != nil && tl.Annotations.ReadOnlyHint
		if want := tl.Name == "defs" || tl.Name == "list_attachments" || tl.Name == "read_attachment"; readOnly != want {
			t.Errorf("%s: readOnlyHint %v", tl.Name, readOnly)
		}
		if (tl.Name == "restart_session" || tl.Name == "rewind_session") && (tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint) {
			t.Errorf("%s: no destructiveHint: %+v", tl.Name, tl.Annotations)
		}
		if idempotent := tl.Annotations != nil && tl.Annotations.IdempotentHint; idempotent != (tl.Name == "rewind_session" || tl.Name == "switch_session") {
			t.Errorf("%s: idempotentHint %v", tl.Name, idempotent)
		}
		// a fork or a switch leaves every session's state as it was
		if (tl.Name == "fork_session" || tl.Name == "switch_session") && (tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || *tl.Annotations.DestructiveHint) {
			t.Errorf("%s: not destructiveHint false: %+v", tl.Name, tl.Annotations)
		}
	}
	if got := strings.Join(sortStrings(names), " "); got != "defs fork_session install interrupt list_attachments python read_attachment restart_session rewind_session switch_session" {
		t.Errorf("tools: %s", got)
	}
	// The help lists every tool the server offers, with its title.
	help, err := sb.command("mcp", "--help").Output()
	if err != nil {
		t.Fatalf("mcp --help: %v", err)
	}
	for _, tl := range tools.Tools {
		if !regexp.MustCompile(`(?m)^  ` + tl.Name + ` +` + regexp.QuoteMeta(tl.Title) + `$`).Match(help) {
			t.Errorf("mcp --help does not list the tool %s (%s):\n%s", tl.Name, tl.Title, help)
		}
	}

	// State between calls; what a block prints through its own file
	// descriptor 1 is output, not protocol.
	c.python("x = 41\ndef inc(n=1):\n    return x + n", false)
	if text, st := c.python("print(inc())\nos.write(1, b'raw\\n')", false); !strings.Contains(text, "42\n") || !strings.Contains(text, "raw\n") ||
		st["stdout"] != nil || st["output_chars"] != float64(len(text)) || st["session"] != "m" || st["workspace"] != sb.ws || st["error"] != nil {
		t.Errorf("second block: %q %v", text, st)
	}
	if _, st := c.python("print('all')", false, "structured_output", "full"); st["stdout"] != "all\n" {
		t.Errorf("structured_output full: %v", st)
	}
	// A repaired block: the note first, then the output.
	text, st := c.python("print('fixed'", false)
	if !strings.HasPrefix(text, "Repaired this block before running it.") || !strings.HasSuffix(text, "fixed\n") || st["repaired"] != true {
		t.Errorf("repaired block: %q %v", text, st)
	}
	// An error: output, then Python's traceback; the structured error.
	text, st = c.python("print('before')\n1/0", true)
	e, _ := st["error"].(map[string]any)
	if !strings.HasPrefix(text, "before\nTraceback") || !strings.Contains(text, "ZeroDivisionError") || e["type"] != "ZeroDivisionError" ||
		e["line"] != 2.0 || !strings.HasPrefix(e["excerpt"].(string), "2: 1/0") {
		t.Errorf("error block: %q %v", text, st)
	}
	// Capped output: first and last parts, and where the rest is (the
	// attachments test reads it).
	text, st = c.python("print('A' * 3000 + 'END')", false)
	contains(t, "capped output", text, "[output was cut: ", "python-output.txt version 1", "read_attachment", "END\n")
	if len(text) > 2800 || st["output_truncated"] != true || st["output_chars"] != 3004.0 {
		t.Errorf("capped output: %d characters, %v %v", len(text), st["output_truncated"], st["output_chars"])
	}
	// defs lists what the session defined.
	contains(t, "defs", c.tool("defs", nil), "inc(n=<int>)", "x: int")
	contains(t, "defs inc", c.tool("defs", map[string]any{"name": "inc"}), "return x + n")
	contains(t, "defs inc with details", c.tool("defs", map[string]any{"name": "inc", "details": true}), "reads: x", "sha256: ", "return x + n")
	if text := c.tool("defs", map[string]any{"pattern": "^in"}); !strings.Contains(text, "inc(n=<int>)") || strings.Contains(text, "x: int") {
		t.Errorf("defs with a pattern: %q", text)
	}

	// A timeout, with progress notifications while it runs.
	text, st = c.python("print('spinning', flush=True)\nwhile True: pass", true, "timeout_s", 3)
	contains(t, "timed out block", text, "spinning\n", "KeyboardInterrupt", "timeout", "timeout_s")
	if st["timed_out"] != true {
		t.Errorf("timed out block: %v", st)
	}
	c.mu.Lock()
	progress := append([]string(nil), c.progress...)
	c.mu.Unlock()
	if len(progress) < 1 || !strings.Contains(progress[0], "has run for") {
		t.Errorf("progress during a 3 s block: %q", progress)
	}

	// A cancelled call interrupts its block: the next call does not wait
	// for it, and the block did not finish.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	_, _, _, err = c.call(ctx, "python", map[string]any{"code": "import time\ntime.sleep(60)\nfinished = True"}, false)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	started := time.Now()
	if text, _ := c.python("print('finished' in globals(), x)", false); text != "False 41\n" {
		t.Errorf("after a cancel: %q", text)
	}
	if took := time.Since(started); took > 20*time.Second {
		t.Errorf("the call after a cancel waited %s", took)
	}

	// A restart: the next result begins with the notice.
	contains(t, "restart_session", c.tool("restart_session", nil), "Restarted")
	text, st = c.python("print(inc(2))", false)
	if !strings.HasPrefix(text, "[Sandbox restarted]") || !strings.HasSuffix(text, "43\n") || st["restarted"] != true {
		t.Errorf("after restart_session: %q %v", text, st)
	}
	contains(t, "interrupt with nothing running", c.tool("interrupt", nil), "No block is running")
	// The interrupt tool, called while a python call runs.
	interrupted := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		text, _, _, err := c.call(ctx, "python", map[string]any{"code": "print('waiting', flush=True)\ntime.sleep(60)"}, true)
		if err != nil {
			text = err.Error()
		}
		interrupted <- text
	}()
	// (once it runs: an interrupt before would withdraw it)
	c.mu.Lock()
	c.progress = nil
	c.mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c.mu.Lock()
		runs := len(c.progress) > 0
		c.mu.Unlock()
		if runs && strings.Contains(c.tool("interrupt", nil), "Interrupted the running block of mcp: vis-agent-test") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the interrupt tool never saw the block running")
		}
	}
	contains(t, "interrupted block", <-interrupted, "waiting\n", "KeyboardInterrupt")

	// Closing standard input ends the server (without SIGTERM: the
	// transport waits 30 s before sending one); the session keeps its
	// snapshot, which a new host restores.
	closed := time.Now()
	if err := c.cs.Close(); err != nil {
		t.Errorf("the server's exit after stdin closed: %v", err)
	}
	if took := time.Since(closed); took > 20*time.Second {
		t.Errorf("the server took %s to exit after stdin closed", took)
	}
	sb.run("stop", "--session", "m", "--workspace", sb.ws)
	if r := sb.block("m", "print(inc())", 0, "--workspace", sb.ws); !strings.HasSuffix(r.stdout, "42\n") {
		t.Errorf("after the server exited and the session stopped: %q", r.stdout)
	}
}

// TestMCPMalformedInput writes raw lines to the server's standard input:
// each bad one gets a JSON-RPC error, the server stays up and answers the
// next request, and standard output carries nothing but JSON-RPC. A
// request sent just before standard input closes is answered.
func TestMCPMalformedInput(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	// Bad command lines: a one-line error and status 2, before any protocol.
	for _, args := range [][]string{{"mcp", "--max-output", "0"}, {"mcp", "--session", "no/slash"}, {"mcp", "extra"}} {
		if r := sb.run(args...); r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "vis-agent: ") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("vis-agent sandbox %v: %+v", args, r)
		}
	}
	cmd := sb.command("mcp", "--session", "raw", "--workspace", sb.ws)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A pipe of the test's own, not StdoutPipe: Wait closes that one as
	// soon as the server exits, and with it the server's last answer
	// when it is not read yet (the server exits right after answering
	// once standard input closes).
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	lines := make(chan string, 64)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				lines <- l
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: the server closed its output", what)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("%s: not a JSON-RPC message on stdout: %q", what, l)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer", what)
		}
		return nil
	}
	errorCode := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	bad := []struct {
		line string
		code float64
		id   any
	}{
		{"this is not json", -32700, nil},
		{`{"jsonrpc": "2.0", "id": 1, "method": `, -32700, nil},
		{"\x00\xff\xfe", -32700, nil},
		{`{"id": 7, "method": "initialize"}`, -32600, 7.0},
		{`{"jsonrpc": "2.0", "id": "s", "method": 5}`, -32600, "s"},
		{`[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]`, -32600, nil},
		{`42`, -32600, nil},
	}
	for _, b := range bad {
		send(b.line)
		m := next(b.line)
		if errorCode(m) != b.code || m["id"] != b.id {
			t.Errorf("%q: answered %v, want code %v id %v", b.line, m, b.code, b.id)
		}
	}
	send(`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := next("initialize")
	res, _ := m["result"].(map[string]any)
	info, _ := res["serverInfo"].(map[string]any)
	if m["id"] != 10.0 || info["name"] != "vis-agent-sandbox" {
		t.Fatalf("initialize after bad lines: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":11,"method":"no/such/method"}`)
	if m := next("unknown method"); m["id"] != 11.0 || errorCode(m) != -32601 {
		t.Errorf("unknown method: %v", m)
	}
	for i, args := range []string{`{"code":5}`, `{}`, `{"code":"x = 1","cod":"y"}`, `{"code":"x = 1","timeout_s":-1}`, `{"code":"x = 1","timeout_s":"4"}`,
		`{"code":"x = 1","structured_output":"all"}`} {
		send(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"python","arguments":` + args + `}}`)
		m := next("bad arguments")
		res, _ := m["result"].(map[string]any)
		want := []string{"code must be a string, not a JSON number", "code", "unknown argument \\\"cod\\\"", "timeout_s", "timeout_s must be a number, not a JSON string",
			"structured_output is"}[i]
		if m["id"] != 12.0 || res["isError"] != true || !strings.Contains(toJSON(res["content"]), want) {
			t.Errorf("python with arguments %s: %v", args, m)
		}
	}
	// Standard input closes right after a request: the client has gone,
	// so its block is withdrawn (or interrupted) but still answered, then
	// the server exits.
	send(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"python","arguments":{"code":"print('still here')"}}}`)
	stdin.Close()
	m = next("a block after bad input")
	if got := toJSON(m); m["id"] != 13.0 || !strings.Contains(got, `still here\n`) && !strings.Contains(got, "KeyboardInterrupt") {
		t.Errorf("a block after bad input: %v", m)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("the server's exit after stdin closed: %v", waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("the server did not exit after stdin closed")
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMCPNoNetwork: `sandbox mcp --no-network` runs its blocks without the
// network, and `--no-jail` without the jail; the description tells the
// model so.
func TestMCPNoNetwork(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py, "VIS_ENV_IDLE_TTL_MS=60000")
	port, _ := testenv.Loopback(t, "the server's answer")
	c := connectMCP(t, sb, "--session", "offline", "--no-network")
	tools, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "python" {
			contains(t, "python's description", tl.Description, "Jailed by the kernel", "Network off")
		}
	}
	text, _ := c.python(fmt.Sprintf("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d)).recv(100)\nexcept PermissionError as e:\n    print('refused:', e)\nprint(session.access.network)", port), false)
	contains(t, "a connect without the network", text, "refused: network access is refused", "False\n")
	if strings.Contains(text, "the server's answer") {
		t.Errorf("the block reached the loopback server:\n%s", text)
	}

	// --no-jail: blocks run unconfined, and the description says so
	free := connectMCP(t, sb, "--session", "free", "--no-jail", "--network", "on")
	if tools, err = free.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "python" {
			contains(t, "python's description under --no-jail", tl.Description, "Not jailed", "Network on")
		}
	}
	if text, _ := free.python("print(session.access.is_jailed, session.access.network)", false); text != "False True\n" {
		t.Errorf("a block under --no-jail: %q", text)
	}
}

// TestMCPCancelQueued: cancelling a python call that waits behind another
// client's block (a `sandbox run`) withdraws the call's block, which never
// runs, and leaves the other block alone; so does a queued client killed
// before its block started. A cancelled call whose block runs interrupts
// it, and not another client's block queued behind it.
func TestMCPCancelQueued(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py, "VIS_ENV_IDLE_TTL_MS=60000")
	c := connectMCP(t, sb, "--session", "q")
	c.python("ran = False", false)

	other := sb.command("run", "--session", "q", "--workspace", sb.ws, "-c",
		"import time\nprint('other started', flush=True)\ntime.sleep(6)\nprint('other finished')")
	stdout, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	other.Stderr = &stderr
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill() })
	r := bufio.NewReader(stdout)
	if l, err := r.ReadString('\n'); l != "other started\n" {
		t.Fatalf("the other client's block: %q %v", l, err)
	}

	// A queued `sandbox run` killed before its block started withdraws it too.
	killed := sb.command("run", "--session", "q", "--workspace", sb.ws, "-c", "killed_ran = True")
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(1500 * time.Millisecond)
		killed.Process.Kill()
		cancel()
	}()
	if _, _, _, err := c.call(ctx, "python", map[string]any{"code": "ran = True\nprint('the cancelled block ran')"}, false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	killed.Wait()
	rest, _ := io.ReadAll(r)
	if err := other.Wait(); err != nil || string(rest) != "other finished\n" || strings.Contains(stderr.String(), "KeyboardInterrupt") {
		t.Errorf("the other client's block after the cancel: %v, stdout %q, stderr %q", err, rest, stderr.String())
	}
	if text, _ := c.python("print(ran, 'killed_ran' in globals())", false); text != "False False\n" {
		t.Errorf("the cancelled blocks ran: %q", text)
	}

	// The other way round: a cancelled call whose block runs interrupts
	// that block only; another client's block queued behind it runs whole.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	running := make(chan error, 1)
	go func() {
		_, _, _, err := c.call(ctx, "python", map[string]any{"code": "import time\nopen('started', 'w').close()\ntime.sleep(60)\nslept = True"}, false)
		running <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(sb.ws, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the python call's block did not start")
		}
	}
	queued := sb.command("run", "--session", "q", "--workspace", sb.ws, "-c", "import time\ntime.sleep(1)\nprint('queued ran')")
	var qout, qerr strings.Builder
	queued.Stdout, queued.Stderr = &qout, &qerr
	if err := queued.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { queued.Process.Kill() })
	time.Sleep(500 * time.Millisecond) // it waits behind the python call's block
	cancel()
	if err := <-running; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled running call: %v", err)
	}
	if err := queued.Wait(); err != nil || qout.String() != "queued ran\n" || strings.Contains(qerr.String(), "KeyboardInterrupt") {
		t.Errorf("the block queued behind a cancelled one: %v, stdout %q, stderr %q", err, qout.String(), qerr.String())
	}
	if text, _ := c.python("print('slept' in globals())", false); text != "False\n" {
		t.Errorf("the cancelled running block finished: %q", text)
	}
}

// readResource reads uri through the client: its one content.
func (c *mcpClient) readResource(uri string) (*mcp.ResourceContents, error) {
	res, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, err
	}
	if len(res.Contents) != 1 {
		c.t.Fatalf("%s: %d contents", uri, len(res.Contents))
	}
	return res.Contents[0], nil
}

// notified waits until the client has received what cond looks for.
func (c *mcpClient) notified(what string, cond func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s", what)
		}
	}
}

// TestMCPAttachments: a cut output kept as an attachment and paged with
// read_attachment; attachments a block stores (text, a new version, an
// image, a binary) listed by list_attachments and as resources, with the
// change notifications (also for another client's attachment, without a
// call), read as text, image and blob; bad names.
func TestMCPAttachments(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py, "VIS_ENV_IDLE_TTL_MS=60000")
	c := connectMCP(t, sb, "--session", "a", "--max-output", "1000")
	contains(t, "no attachments", c.tool("list_attachments", nil), "No attachments yet")

	// A cut output: the note names the attachment holding all of it.
	text, _ := c.python("for i in range(500):\n    print(f'line {i:04d}')", false)
	m := regexp.MustCompile(`python-output\.txt version 1, id (\w+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the note of a cut output:\n%s", text)
	}
	id := m[1]
	page := c.tool("read_attachment", map[string]any{"id_or_filename": id, "offset": 4500, "limit": 100})
	contains(t, "the output's attachment", page, "python-output.txt version 1: output, text/plain", "characters 4500 to 4600 of 5000; read on with offset 4600",
		"line 0450\nline 0451\n")
	// Pages by lines too.
	page = c.tool("read_attachment", map[string]any{"id_or_filename": id, "offset_lines": 10, "limit_lines": 2})
	contains(t, "the output's attachment by lines", page, "[lines 11 to 12 of 500; read on with offset_lines 12]\nline 0010\nline 0011\n")
	if text, isErr, _ := c.toolResult("read_attachment", map[string]any{"id_or_filename": id, "offset": 1, "limit_lines": 2}); !isErr || !strings.Contains(text, "not both") {
		t.Errorf("read_attachment by characters and lines: %q", text)
	}
	whole, err := c.readResource("vis-attachment://a/python-output.txt")
	if err != nil || !strings.HasPrefix(whole.Text, "line 0000\n") || !strings.HasSuffix(whole.Text, "line 0499\n") || len(whole.Text) != 5000 {
		t.Errorf("the output as a resource: %v %d characters", err, len(whole.Text))
	}
	c.notified("list_changed after the output's attachment", func() bool { return c.listChanged > 0 })

	// Attachments stored the way a block's attach() stores them.
	png := pngBytes(t)
	blob := []byte{0, 1, 2, 0xff, 0xfe}
	attach(t, sb, "a", "notes.txt", "text/plain", []byte("first version\n"))
	attach(t, sb, "a", "plot.png", "image/png", png)
	attach(t, sb, "a", "data.bin", "application/octet-stream", blob)
	before := c.listChanged
	c.python("pass", false) // the end of a block: the server looks
	c.notified("list_changed after a block attached", func() bool { return c.listChanged > before })
	list, err := c.cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	if got := strings.Join(sortStrings(uris), " "); got != "vis-attachment://a/data.bin vis-attachment://a/notes.txt vis-attachment://a/plot.png vis-attachment://a/python-output.txt vis-session://a/log" {
		t.Errorf("resources: %s", got)
	}
	listing := c.tool("list_attachments", nil)
	contains(t, "list_attachments", listing, "notes.txt version 1: text", "plot.png version 1: image, image/png", "data.bin version 1", "python-output.txt version 1", "vis-attachment://a/")

	// A new version: the subscriber of the filename's resource hears of it.
	if err := c.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "vis-attachment://a/notes.txt"}); err != nil {
		t.Fatal(err)
	}
	attach(t, sb, "a", "notes.txt", "text/plain", []byte("second version\n"))
	c.python("pass", false)
	c.notified("resources/updated for notes.txt", func() bool { return slices.Contains(c.updated, "vis-attachment://a/notes.txt") })
	for uri, want := range map[string]string{"vis-attachment://a/notes.txt": "second version\n", "vis-attachment://a/notes.txt?version=1": "first version\n",
		"vis-attachment://a/notes.txt?version=-2": "first version\n"} {
		if r, err := c.readResource(uri); err != nil || r.Text != want || r.MIMEType != "text/plain" {
			t.Errorf("%s: %v %+v", uri, err, r)
		}
	}
	// An image comes back as an image; a binary as a blob, described by the tool.
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_attachment", Arguments: map[string]any{"id_or_filename": "plot.png"}})
	if err != nil || res.IsError || len(res.Content) != 2 {
		t.Fatalf("read_attachment plot.png: %v %+v", err, res)
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, png) {
		t.Errorf("plot.png: %+v", res.Content[1])
	}
	contains(t, "read_attachment data.bin", c.tool("read_attachment", map[string]any{"id_or_filename": "data.bin"}), "application/octet-stream", "Not text")
	if r, err := c.readResource("vis-attachment://a/data.bin"); err != nil || !bytes.Equal(r.Blob, blob) || r.Text != "" {
		t.Errorf("data.bin as a resource: %v %+v", err, r)
	}

	// A real attach() in a block: the list changes when the call returns.
	before = c.listChanged
	text, _ = c.python("d = attach('made by a block\\n', filename='block.txt')\nprint(d.version, d.block > 0)", false)
	if text != "1 True\n" {
		t.Errorf("attach() in a block: %q", text)
	}
	c.notified("list_changed after attach() in a block", func() bool { return c.listChanged > before })
	if r, err := c.readResource("vis-attachment://a/block.txt"); err != nil || r.Text != "made by a block\n" {
		t.Errorf("block.txt: %v %+v", err, r)
	}

	// Another client's block attaches a new version: the subscriber hears
	// of it without a call of its own.
	c.mu.Lock()
	heard := len(c.updated)
	c.mu.Unlock()
	attach(t, sb, "a", "notes.txt", "text/plain", []byte("third version\n"))
	c.notified("resources/updated for another client's version of notes.txt", func() bool {
		return len(c.updated) > heard && c.updated[len(c.updated)-1] == "vis-attachment://a/notes.txt"
	})

	// Another client's block attaches: resources/list sees it without a
	// python call of this client.
	attach(t, sb, "a", "late.txt", "text/plain", []byte("late\n"))
	if list, err = c.cs.ListResources(context.Background(), nil); err != nil || !slices.ContainsFunc(list.Resources, func(r *mcp.Resource) bool {
		return r.URI == "vis-attachment://a/late.txt" && r.Size == 5 && r.MIMEType == "text/plain"
	}) {
		t.Errorf("resources after another client's attach: %v %v", err, list)
	}

	// Bad names: a tool error naming what there is; a resource not found.
	text, _, isErr, err := c.call(context.Background(), "read_attachment", map[string]any{"id_or_filename": "note.txt"}, false)
	if err != nil || !isErr || !strings.Contains(text, "notes.txt") {
		t.Errorf("an unknown filename: %v %v %q", err, isErr, text)
	}
	for _, uri := range []string{"vis-attachment://a/nothing.txt", "vis-attachment://other/notes.txt", "vis-attachment://a/notes.txt?version=x"} {
		if _, err := c.readResource(uri); err == nil {
			t.Errorf("%s: read", uri)
		}
	}
}

// pngBytes is a small real PNG image.
func pngBytes(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// attach stores data in the attachments store of sb's Vis home as the
// next version of filename in session name, as a block's attach() does.
func attach(t *testing.T, sb *sandbox, name, filename, mediaType string, data []byte) {
	t.Helper()
	l := paths.New(func(k string) string { return map[string]string{"VIS_HOME": sb.home}[k] })
	st, err := attachments.Open(l.Attachments())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Attach(attachments.New{Session: session.Find(l.Sessions(), session.Meta{Name: name, Workspace: sb.ws}).ID(), SessionName: name, Block: 1, Filename: filename, MediaType: mediaType},
		bytes.NewReader(data), attachments.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// TestMCPOutputPastTheAttachmentLimit: an output larger than
// sandbox.max_attachment_mb is kept up to the limit, and the note says so.
func TestMCPOutputPastTheAttachmentLimit(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py, "VIS_ENV_IDLE_TTL_MS=60000")
	if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nmax_attachment_mb = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := connectMCP(t, sb, "--session", "big")
	text, st := c.python("print('é' * 700_000)", false)
	note, _, _ := strings.Cut(text, "\n")
	contains(t, "the note", note, "[output was cut: ", "python-output.txt version 1", "it holds the first 1.0 MiB, the last 343.2 KiB were past the attachment size limit")
	if st["output_chars"] != 700001.0 {
		t.Errorf("output_chars %v", st["output_chars"])
	}
	res, err := c.readResource("vis-attachment://big/python-output.txt")
	if err != nil || len(res.Text) != 1<<20 || strings.Trim(res.Text, "é") != "" {
		t.Errorf("the kept output: %v, %d bytes", err, len(res.Text))
	}
}
