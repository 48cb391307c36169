package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries an exit status out of a command without cobra printing
// anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "vis-agent",
		Short:         "An embedded-CPython python for agent sandboxes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPythonCmd(), newRuntimeCmd(), newConfigCmd())
	return root
}

// Execute runs the vis-agent command line and exits.
func Execute() {
	if len(os.Args) > 1 && os.Args[1] == "python" {
		// The hot path: start-up is most of what a short python run costs,
		// and python's command line is not a cobra command line anyway.
		os.Exit(runPython(os.Args[2:], os.Stdout, os.Stderr))
	}
	err := newRoot().Execute()
	var ee exitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &ee):
		os.Exit(ee.code)
	default:
		fmt.Fprintf(os.Stderr, "vis-agent: %v\n", err)
		os.Exit(2)
	}
}
