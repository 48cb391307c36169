package pyrun

import (
	"fmt"
	"io"

	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/jail/audit"
)

// refuseNetwork makes --no-network hold before the program starts: the C
// audit hook gives the program's own socket calls a PermissionError
// naming --no-network, and the kernel layer under it refuses the network
// to the whole process, so also to ctypes, C extensions and every child.
// What this kernel cannot enforce is said on stderr; a layer that fails
// is an error, and the program does not run. libpython is loaded.
func refuseNetwork(stderr io.Writer) error {
	if err := audit.Install(audit.Policy{NoNetwork: true, Name: "vis-agent python --no-network"}); err != nil {
		return fmt.Errorf("--no-network: %w", err)
	}
	st, err := jail.Apply(jail.NoNetwork())
	if err != nil {
		return fmt.Errorf("--no-network: %w", err)
	}
	for _, m := range st.Missing {
		fmt.Fprintf(stderr, "vis-agent python: --no-network: %s; the audit hook still refuses the program's own sockets\n", m)
	}
	return nil
}
