package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// rawMCP is `vis-agent sandbox mcp` driven line by line, as a client that
// writes several requests before it reads any answer.
type rawMCP struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex
	answers map[float64]map[string]any
	notes   []string // progress notifications: "TOKEN: message"
	// progress are the progress values of each token, in order.
	progress map[string][]float64
	arrived  chan struct{}
	done     chan struct{}
}

func startRawMCP(t *testing.T, sb *sandbox, session string) *rawMCP {
	t.Helper()
	cmd := sb.command("mcp", "--session", session, "--workspace", sb.ws)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawMCP{t: t, cmd: cmd, stdin: stdin, answers: map[float64]map[string]any{}, progress: map[string][]float64{}, arrived: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		r := bufio.NewReader(stdout)
		for {
			l, err := r.ReadString('\n')
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				c.mu.Lock()
				if id, ok := m["id"].(float64); ok {
					c.answers[id] = m
				} else if p, ok := m["params"].(map[string]any); ok && m["method"] == "notifications/progress" {
					c.notes = append(c.notes, fmt.Sprintf("%v: %v", p["progressToken"], p["message"]))
					v, _ := p["progress"].(float64)
					token := fmt.Sprint(p["progressToken"])
					c.progress[token] = append(c.progress[token], v)
				}
				c.mu.Unlock()
				select {
				case c.arrived <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
		cmd.Wait()
	})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipelined","version":"1"}}}`)
	c.answer(0)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *rawMCP) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a tools/call without waiting for its answer (with a
// progress token named after id).
func (c *rawMCP) call(id int, tool string, args map[string]any) {
	c.t.Helper()
	a, _ := json.Marshal(args)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"progressToken":"p%d"}}}`, id, tool, a, id))
}

// answer waits for the answer to id.
func (c *rawMCP) answer(id int) map[string]any {
	c.t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		c.mu.Lock()
		m, ok := c.answers[float64(id)]
		c.mu.Unlock()
		if ok {
			return m
		}
		select {
		case <-c.arrived:
		case <-c.done:
			c.mu.Lock()
			m, ok := c.answers[float64(id)]
			c.mu.Unlock()
			if !ok {
				c.t.Fatalf("the server ended without answering %d", id)
			}
			return m
		case <-deadline:
			c.t.Fatalf("no answer to %d", id)
		}
	}
}

// text is the text of a tools/call answer, and whether it is an error.
func (c *rawMCP) text(id int) (string, bool) {
	m := c.answer(id)
	res, _ := m["result"].(map[string]any)
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, ct := range content {
		if tc, ok := ct.(map[string]any); ok && tc["type"] == "text" {
			b.WriteString(fmt.Sprint(tc["text"]))
		}
	}
	return b.String(), res["isError"] == true
}

// TestMCPPipelinedOrder: calls one client sends without waiting run in
// the order sent (they ran in any order before).
func TestMCPPipelinedOrder(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	c := startRawMCP(t, sb, "order")
	const rounds = 6
	for i := range rounds {
		c.call(10*i+1, "python", map[string]any{"code": fmt.Sprintf("zz = %d", i)})
		c.call(10*i+2, "python", map[string]any{"code": "print(zz)"})
		c.call(10*i+3, "python", map[string]any{"code": "del zz"})
	}
	for i := range rounds {
		if text, isErr := c.text(10*i + 2); isErr || text != fmt.Sprintf("%d\n", i) {
			t.Errorf("round %d: print(zz) answered %q (error %v)", i, text, isErr)
		}
	}
}

// TestMCPClientGone: a client that closes its standard input, or whose
// server gets SIGTERM, interrupts its running block and withdraws its
// queued one.
func TestMCPClientGone(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	c := startRawMCP(t, sb, "gone")
	c.call(1, "python", map[string]any{"code": "import time\nprint('started', flush=True)\ntime.sleep(30)\nfinished = True"})
	c.call(2, "python", map[string]any{"code": "queued = True"})
	c.running(1)
	c.stdin.Close()
	if text, _ := c.text(1); !strings.Contains(text, "KeyboardInterrupt") {
		t.Errorf("the running block of a client that left: %q", text)
	}
	if text, _ := c.text(2); !strings.Contains(text, "did not run") {
		t.Errorf("the queued block of a client that left: %q", text)
	}
	started := time.Now()
	if r := sb.block("gone", "print('finished' in globals(), 'queued' in globals())", 0, "--workspace", sb.ws); r.stdout != "False False\n" {
		t.Errorf("after the client left: %q", r.stdout)
	}
	if took := time.Since(started); took > 15*time.Second {
		t.Errorf("the next block waited %s for the departed client's block", took)
	}

	c = startRawMCP(t, sb, "gone")
	c.call(1, "python", map[string]any{"code": "import time\nprint('started', flush=True)\ntime.sleep(30)\nfinished = True"})
	c.running(1)
	c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
	started = time.Now()
	if r := sb.block("gone", "print('finished' in globals())", 0, "--workspace", sb.ws); r.stdout != "False\n" {
		t.Errorf("after SIGTERM: %q", r.stdout)
	}
	if took := time.Since(started); took > 15*time.Second {
		t.Errorf("the next block waited %s for the signalled client's block", took)
	}
}

// running waits until call id's block has run for a second (its
// progress says so).
func (c *rawMCP) running(id int) {
	c.t.Helper()
	want := fmt.Sprintf("p%d: the block has run for", id)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c.mu.Lock()
		notes := strings.Join(c.notes, "\n")
		c.mu.Unlock()
		if strings.Contains(notes, want) {
			return
		}
	}
	c.t.Fatalf("call %d's block never ran", id)
}

// spinning starts a `sandbox run` block that loops until interrupted, and
// waits until it runs.
func spinning(t *testing.T, sb *sandbox, session string) *exec.Cmd {
	t.Helper()
	spin := sb.command("run", "--session", session, "--workspace", sb.ws, "-c", "print('spin', flush=True)\nwhile True: pass")
	stdout, err := spin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spin.Process.Kill(); spin.Wait() })
	buf := make([]byte, 5)
	io.ReadFull(stdout, buf)
	return spin
}

// TestInterruptOwnership: an interrupt reaches the caller's own block;
// another client's only when asked for any, and the answer names whose
// block it stopped. A call waiting behind another client's block says so
// in its progress.
func TestInterruptOwnership(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	spin := spinning(t, sb, "own")
	c := startRawMCP(t, sb, "own")
	c.call(2, "interrupt", map[string]any{})
	if text, isErr := c.text(2); !isErr || !strings.Contains(text, "belongs to sandbox run") || !strings.Contains(text, "any") {
		t.Errorf("the MCP interrupt of a command line's block: %q (error %v)", text, isErr)
	}
	// (an interrupt without any now would withdraw this call, the caller's)
	c.call(1, "python", map[string]any{"code": "print('after the spin')"})
	time.Sleep(2500 * time.Millisecond) // the waiting call reports progress
	c.call(3, "interrupt", map[string]any{"any": true})
	if text, isErr := c.text(3); isErr || !strings.Contains(text, "Interrupted the running block of sandbox run") {
		t.Errorf("the MCP interrupt with any: %q (error %v)", text, isErr)
	}
	spin.Wait()
	if text, _ := c.text(1); text != "after the spin\n" {
		t.Errorf("the call that waited: %q", text)
	}
	c.mu.Lock()
	notes := strings.Join(c.notes, "\n")
	c.mu.Unlock()
	contains(t, "progress of a waiting call", notes, "waiting for another client's block (")

	// The command line's interrupt and an MCP client's block.
	c.call(4, "python", map[string]any{"code": "import time\nprint('mcp spin', flush=True)\ntime.sleep(60)\nfinished = True"})
	c.running(4)
	r := sb.run("interrupt", "--session", "own", "--workspace", sb.ws)
	if r.code == 0 || !strings.Contains(r.stderr, "belongs to mcp: pipelined") || !strings.Contains(r.stderr, "--any") {
		t.Errorf("sandbox interrupt of an MCP block: %+v", r)
	}
	r = sb.run("interrupt", "--session", "own", "--workspace", sb.ws, "--any")
	if r.code != 0 || !strings.Contains(r.stdout, "Interrupted the running block of mcp: pipelined") {
		t.Errorf("sandbox interrupt --any: %+v", r)
	}
	if text, _ := c.text(4); !strings.Contains(text, "KeyboardInterrupt") {
		t.Errorf("the MCP block interrupted by --any: %q", text)
	}
	// An MCP client's own block.
	c.call(5, "python", map[string]any{"code": "import time\nprint('mcp spin', flush=True)\ntime.sleep(60)"})
	c.running(5)
	c.call(6, "interrupt", map[string]any{})
	if text, _ := c.text(6); !strings.Contains(text, "Interrupted the running block of mcp: pipelined") {
		t.Errorf("the MCP interrupt of its own block: %q", text)
	}
	if text, _ := c.text(5); !strings.Contains(text, "KeyboardInterrupt") {
		t.Errorf("the MCP block it interrupted: %q", text)
	}
	if r := sb.run("interrupt", "--session", "own", "--workspace", sb.ws); r.code != 0 || !strings.Contains(r.stdout, "No block is running") {
		t.Errorf("sandbox interrupt with nothing running: %+v", r)
	}
}

// TestMCPOutputShaping: what a model reads is what a terminal would show
// (a carriage-return progress bar is its last state, colours are gone),
// and a cut output starts with the line saying what is missing and where
// the whole is, the parts kept cut at lines' ends.
func TestMCPOutputShaping(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	c := connectMCP(t, sb, "--session", "shape", "--max-output", "2000")
	text, st := c.python("import sys\nfor i in range(2000):\n    sys.stdout.write(f'\\r[{i * 50 // 1999:<50}] {i + 1}/2000')\nprint()\nprint('\\x1b[31mred\\x1b[0m done')", false)
	if want := "[50                                                ] 2000/2000\nred done\n"; text != want {
		t.Errorf("a progress bar and colours: %q (structured %v)", text, st["output_chars"])
	}
	text, _ = c.python("for i in range(1000):\n    print(f'row {i:04d} ' + 'x' * 20)", false)
	first, rest, _ := strings.Cut(text, "\n")
	if !strings.HasPrefix(first, "[output was cut: ") || !strings.Contains(first, "lines / ") || !strings.Contains(first, "whole output: attachment python-output.txt") ||
		!strings.Contains(first, "offset_lines") {
		t.Errorf("the first line of a cut output: %q", first)
	}
	for _, l := range strings.Split(strings.TrimSuffix(rest, "\n"), "\n") {
		if !regexp.MustCompile(`^(row \d{4} x{20}|\[\.\.\. .* cut here \.\.\.\])$`).MatchString(l) {
			t.Errorf("a line cut in the middle: %q", l)
		}
	}
}

// TestMCPOwnWaitProgress: a call that waits behind the same client's
// earlier call says so in its progress, whose values keep growing into
// its block's own run.
func TestMCPOwnWaitProgress(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	c := startRawMCP(t, sb, "own-wait")
	c.call(1, "python", map[string]any{"code": "import time\ntime.sleep(3)\nprint('first')"})
	c.call(2, "python", map[string]any{"code": "import time\ntime.sleep(1.5)\nprint('second')"})
	if text, isErr := c.text(2); isErr || text != "second\n" {
		t.Errorf("the second call: %q (error %v)", text, isErr)
	}
	c.mu.Lock()
	notes, values := strings.Join(c.notes, "\n"), c.progress["p2"]
	c.mu.Unlock()
	contains(t, "progress of a call behind its client's own", notes, "p2: waiting for this client's earlier calls (", "p2: the block has run for")
	if strings.Contains(notes, "p1: waiting") {
		t.Errorf("the first call reported a wait:\n%s", notes)
	}
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			t.Errorf("call 2's progress does not grow: %v", values)
		}
	}
}
