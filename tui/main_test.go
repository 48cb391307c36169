package tui

import (
	"os"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testenv"
)

// TestMain removes the vis-agent binary the tests built (without
// VIS_AGENT_BIN) from the temp folder once they end.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}
