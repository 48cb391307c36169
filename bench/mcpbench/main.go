// Command mcpbench times a warm block through `vis-agent sandbox mcp`
// side by side with the same block through the Go client API (package
// client), on one session, and how long a new server takes to answer
// initialize. `make bench` runs it; BENCHMARKS.md records its figures.
//
//	go run ./bench/mcpbench [-runs N] [-bin bin/vis-agent]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

func main() {
	runs := flag.Int("runs", 400, "round trips of each kind (after 20 warm-up ones)")
	bin := flag.String("bin", "bin/vis-agent", "the vis-agent binary")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	if err == nil {
		err = run(abs, *runs)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpbench: %v\n", err)
		os.Exit(1)
	}
}

func run(bin string, runs int) error {
	pythons := testenv.FindPythons()
	if len(pythons) == 0 {
		return fmt.Errorf("no CPython 3.10+ shared library found")
	}
	py := pythons[0]
	home, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	// This process's environment is the one the session's host (started
	// by the client API) and the MCP server inherit.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "VIS_") {
			os.Unsetenv(k)
		}
	}
	os.Setenv("VIS_HOME", home)
	os.Setenv("VIS_PYTHON_NATIVE_PATH", py.Library)
	os.Setenv("VIS_ENV_IDLE_TTL_MS", "600000")

	root := filepath.Join(home, "sandbox", "sessions")
	m := session.Meta{Name: "rt", Workspace: home}
	s, err := client.Open(root, m, append([]string{bin}, protocol.HostArgs(session.Find(root, m).Dir, nil)...))
	if err != nil {
		return err
	}
	defer s.Stop(true)

	ctx := context.Background()
	var inits []time.Duration
	for range 10 {
		start := time.Now()
		cs, err := connect(ctx, bin, home)
		if err != nil {
			return err
		}
		inits = append(inits, time.Since(start))
		cs.Close()
	}
	cs, err := connect(ctx, bin, home)
	if err != nil {
		return err
	}
	defer cs.Close()

	var viaMCP, viaClient []time.Duration
	for i := range runs + 20 {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "python", Arguments: map[string]any{"code": "x = 1"}})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("x = 1 through MCP failed: %v", res.Content)
		}
		m := time.Since(start)
		start = time.Now()
		r, err := s.Run("x = 1", client.RunOptions{}, nil)
		if err != nil {
			return err
		}
		if r.Error != nil {
			return fmt.Errorf("x = 1 through the client raised %s", r.Error.Type)
		}
		if i >= 20 {
			viaMCP, viaClient = append(viaMCP, m), append(viaClient, time.Since(start))
		}
	}
	fmt.Printf("\nMCP server on %s: a new `vis-agent sandbox mcp` answers initialize in %.1f ms (median of %d, process start included)\n",
		py.Name, ms(mid(inits)), len(inits))
	fmt.Printf("warm x = 1 round trip, median of %d alternating: MCP tools/call %.3f ms, client API %.3f ms, ratio %.2f (goal <= 1.5)\n",
		runs, ms(mid(viaMCP)), ms(mid(viaClient)), float64(mid(viaMCP))/float64(mid(viaClient)))
	return nil
}

// connect starts a server for session rt of home and initializes it.
func connect(ctx context.Context, bin, home string) (*mcp.ClientSession, error) {
	cmd := exec.Command(bin, "sandbox", "mcp", "--session", "rt", "--workspace", home)
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("start vis-agent sandbox mcp: %w", err)
	}
	return cs, nil
}

func mid(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
