package cli

import (
	"fmt"
	"io"

	"github.com/vis-agent/vis-agent/sandbox/jail"
)

// refuseNetwork puts the kernel layer of --no-network under the whole
// process before the program starts: it then holds for ctypes, C
// extensions and every child, under the audit hook's clear error. What
// this kernel cannot enforce is said on stderr; a layer that fails is an
// error, and the program does not run.
func refuseNetwork(stderr io.Writer) error {
	st, err := jail.Apply(jail.NoNetwork())
	if err != nil {
		return fmt.Errorf("--no-network: %w", err)
	}
	for _, m := range st.Missing {
		fmt.Fprintf(stderr, "vis-agent python: --no-network: %s; the audit hook still refuses the program's own sockets\n", m)
	}
	return nil
}
