package cli

import (
	"slices"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/clitest"
)

func TestRuntimeAndConfigOptions(t *testing.T) {
	r, err := clitest.Parse(t, NewCmdRuntime, "--forget")
	if err != nil || !r.Forget {
		t.Errorf("runtime --forget: %v, %+v", err, r)
	}
	if r, err = clitest.Parse(t, NewCmdRuntime, "extra"); err == nil || r != nil {
		t.Error("runtime takes an argument")
	}
	if c, err := clitest.Parse(t, NewCmdConfig); err != nil || c == nil {
		t.Errorf("config: %v", err)
	}
	if c, err := clitest.Parse(t, NewCmdConfig, "--bogus"); err == nil || c != nil {
		t.Error("config takes --bogus")
	}
}

// TestPythonOptions: python's command line reaches runF whole, its
// options and the program's alike, none taken by cobra.
func TestPythonOptions(t *testing.T) {
	for _, args := range [][]string{{"-c", "pass", "--help", "-x"}, {"-m", "pip", "install", "--no-index"}, {"prog.py", "--version"}, {}} {
		p, err := clitest.Parse(t, NewCmdPython, args...)
		if err != nil || p == nil || !slices.Equal(p.Args, args) {
			t.Errorf("python %q: %v, %+v", args, err, p)
		}
	}
}
