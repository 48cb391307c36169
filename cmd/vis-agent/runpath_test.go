package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runPlan is the one run plan of the sandbox's Vis home, and its inode
// (a plan saved again is a new file).
func (sb *sandbox) runPlan() (string, uint64) {
	sb.t.Helper()
	m, _ := filepath.Glob(filepath.Join(sb.home, "python", "runpath", "*"))
	if len(m) != 1 {
		sb.t.Fatalf("run plans: %v", m)
	}
	st, err := os.Stat(m[0])
	if err != nil {
		sb.t.Fatal(err)
	}
	return m[0], st.Sys().(*syscall.Stat_t).Ino
}

// goRun is sb.run through Go's client (the run plans are not looked at).
func (sb *sandbox) goRun(args ...string) result {
	sb.t.Helper()
	env := sb.env
	sb.env = append(append([]string(nil), env...), "VIS_PYTHON_FASTPATH=0")
	defer func() { sb.env = env }()
	return sb.run(args...)
}

// unstable are the parts of a block's output that differ from one block to
// the next: its number, attachment ids and versions.
var unstable = regexp.MustCompile(`block \d+|att_[0-9a-f]+|version \d+| v\d+`)

// TestSandboxRunPath: a warm `sandbox run -c` is carried to the host by
// sandbox/client/runpath before Go starts (the plan the first run saved is not
// saved again), and shows what Go's client shows: output on both streams,
// a trailing expression, errors and their status, attachments, notices,
// bytes JSON escapes; Ctrl-C interrupts the block, a second one leaves it
// running; a stopped session, a changed setting, a wrong key and other
// flags go to Go.
func TestSandboxRunPath(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("rp", "x = 1", 0)
			plan, ino := sb.runPlan()
			for _, code := range []string{
				`print("out"); import sys; print("err", file=sys.stderr, flush=True); print("more")`,
				`x + 1`,
				`"q" * 5000`,
				`1/0`,
				`print('fixed'`,
				`attach(b"hello" * 300, "a.txt")`,
				"print(\"a\\x00b\\u00e9\\U0001F600\\x1b[1m\\u2028<&>\\\\\\\"\")",
				`raise SystemExit(3)`,
			} {
				c, g := sb.run("run", "--session", "rp", "-c", code), sb.goRun("run", "--session", "rp", "-c", code)
				if c.code != g.code || unstable.ReplaceAllString(c.stdout, "") != unstable.ReplaceAllString(g.stdout, "") ||
					unstable.ReplaceAllString(c.stderr, "") != unstable.ReplaceAllString(g.stderr, "") {
					t.Errorf("block %q: carried %d %q %q, through Go %d %q %q", code, c.code, c.stdout, c.stderr, g.code, g.stdout, g.stderr)
				}
			}
			sb.run("restart", "--session", "rp")
			if r := sb.block("rp", "x", 0); !strings.Contains(r.stdout, "[Sandbox restarted]") || !strings.HasSuffix(r.stdout, "\n1\n") {
				t.Errorf("after a restart: %q", r.stdout)
			}
			if _, now := sb.runPlan(); now != ino {
				t.Fatal("the plan was saved again: the blocks went through Go")
			}

			// Ctrl-C: KeyboardInterrupt in the block, status 1; a second
			// one (the block caught the first): the block goes on, status
			// 130.
			interrupt := func(times int) result {
				cmd := sb.command("run", "--session", "rp", "-c", "import time\n"+
					"try:\n    print('go', flush=True)\n    time.sleep(20)\nexcept KeyboardInterrupt:\n    if "+strconv.Itoa(times)+" > 1:\n"+
					"        print('caught', flush=True)\n        time.sleep(20)\n    raise")
				out, errb := startPiped(t, cmd)
				lines := bufio.NewReader(out)
				var seen strings.Builder
				start := time.Now()
				for i := 0; i < times; i++ {
					line, _ := lines.ReadString('\n')
					seen.WriteString(line)
					cmd.Process.Signal(os.Interrupt)
				}
				cmd.Wait()
				if time.Since(start) > 10*time.Second {
					t.Errorf("Ctrl-C ×%d took %s", times, time.Since(start))
				}
				return result{seen.String(), errb.String(), cmd.ProcessState.ExitCode()}
			}
			if r := interrupt(1); r.code != 1 || r.stdout != "go\n" || !strings.Contains(r.stderr, "KeyboardInterrupt") {
				t.Errorf("Ctrl-C: %d %q %q", r.code, r.stdout, r.stderr)
			}
			if r := interrupt(2); r.code != 130 || r.stdout != "go\ncaught\n" || r.stderr != "vis-agent: left the block running in the session\n" {
				t.Errorf("Ctrl-C twice: %d %q %q", r.code, r.stdout, r.stderr)
			}
			sb.run("interrupt", "--session", "rp", "--any")
			if _, now := sb.runPlan(); now != ino {
				t.Fatal("the plan was saved again: the interrupted blocks went through Go")
			}

			// A wrong key: the host's refusal, as Go's client shows it.
			key := filepath.Join(sb.folder("rp"), "key")
			good, err := os.ReadFile(key)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(key, []byte(strings.Repeat("0", len(good))), 0o600)
			c, g := sb.run("run", "--session", "rp", "-c", "x"), sb.goRun("run", "--session", "rp", "-c", "x")
			if c.code != 1 || c != g || !strings.Contains(c.stderr, "key") {
				t.Errorf("a wrong key: carried %v, through Go %v", c, g)
			}
			os.WriteFile(key, good, 0o600)

			// A stopped session: Go starts its host.
			sb.run("stop", "--session", "rp")
			if r := sb.block("rp", "print(x)", 0); !strings.HasSuffix(r.stdout, "1\n") {
				t.Errorf("after a stop: %q", r.stdout)
			}
			if _, now := sb.runPlan(); now == ino {
				t.Error("a block of a stopped session did not go through Go (which saves the plan again)")
			}
			// A changed setting: the plan no longer holds.
			time.Sleep(replayWait)
			_, ino = sb.runPlan()
			os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\necho = false\n"), 0o600)
			if r := sb.block("rp", "x", 0); r.stdout != "" {
				t.Errorf("echo = false: %q", r.stdout)
			}
			if _, now := sb.runPlan(); now != ino {
				t.Error("a run after a change of the settings saved a plan within the racy window")
			}
			if _, err := os.Stat(plan); err != nil {
				t.Error(err)
			}
		})
	}
}
