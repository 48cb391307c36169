package tui

import (
	"os"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestMain removes the binary the tests built (without VIS_AGENT_BIN).
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
