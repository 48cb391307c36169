package cli

import (
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
