package repair

import (
	"os"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

// compiler is the Compiler backed by a worker's python.
func compiler(w *repairtest.Worker) Compiler {
	return func(src string) *protocol.SyntaxError {
		e := w.Compile(src)
		if e == nil {
			return nil
		}
		return &protocol.SyntaxError{Message: e.Msg, Line: e.Lineno, Column: e.Offset, Text: e.Text}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	repairtest.StopWorkers()
	os.Exit(code)
}
