package tui

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// liveSession is a session of the built binary in a temporary Vis home,
// its host started by the first call and stopped when the test ends.
func liveSession(t *testing.T) *client.Session {
	t.Helper()
	bin, py := testenv.Binary(t), testenv.First(t)
	home := t.TempDir()
	root := filepath.Join(home, "sandbox", "sessions")
	m := session.Meta{Name: "default", Workspace: t.TempDir()}
	policy := protocol.Policy{Jail: true, Network: true, MaxThreads: 64, MemoryMB: 4096}
	s, err := client.Open(root, m, append([]string{bin}, protocol.HostArgs(session.Find(root, m).Dir, &policy)...))
	if err != nil {
		t.Fatal(err)
	}
	s.Env = append(os.Environ(), "VIS_HOME="+home, "VIS_PYTHON_NATIVE_PATH="+py.Library, "VIS_ENV_IDLE_TTL_MS=120000")
	t.Cleanup(func() { s.Stop(true) })
	return s
}

// TestProgramWithASession runs the REPL in Bubble Tea's own program loop
// (teatest) against a real session: Enter runs a block only once the
// session says it is complete (a def waits for its blank line), its output
// and the helper in the defs panel appear, and Ctrl+D quits, leaving both
// entries in the history file and the session running.
func TestProgramWithASession(t *testing.T) {
	s := liveSession(t)
	hist := t.TempDir()
	tm := teatest.NewTestModel(t, New(Config{Session: s, HistoryDir: hist}), teatest.WithInitialTermSize(120, 30))
	enter := tea.KeyPressMsg{Code: tea.KeyEnter}
	seen := func(what string, want ...string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			for _, w := range want {
				if !bytes.Contains(b, []byte(w)) {
					return false
				}
			}
			return true
		}, teatest.WithDuration(time.Minute), teatest.WithCheckInterval(20*time.Millisecond))
	}
	seen("the session's status", "default")
	tm.Type("def answer():")
	tm.Send(enter) // incomplete: a new, indented line
	tm.Type(`"""The answer."""`)
	tm.Send(enter)
	tm.Type("return 41 * 1000 + 7")
	tm.Send(enter)
	tm.Send(enter) // the blank line ends the def
	seen("the helper in the defs panel", "answer()", "The answer.")
	tm.Type("print(answer())")
	tm.Send(enter)
	seen("the block's output", "41007")
	tm.Send(tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl})
	tm.WaitFinished(t, teatest.WithFinalTimeout(time.Minute))

	if got, want := loadHistory(historyFile(hist, s.Meta.Workspace)).entries,
		[]string{"def answer():\n    \"\"\"The answer.\"\"\"\n    return 41 * 1000 + 7", "print(answer())"}; !slices.Equal(got, want) {
		t.Errorf("history after quitting: %q, want %q", got, want)
	}
	if st, err := s.Status(); err != nil || st.ChildPID == 0 {
		t.Errorf("the session after the REPL quit: %+v %v", st, err)
	}
}
