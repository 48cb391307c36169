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

// failure is a command that could not do its work: status 1, where a
// command line cobra refuses has status 2.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }

// runE marks the errors of a command's work as failures.
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		var ee exitError
		if err == nil || errors.As(err, &ee) {
			return err
		}
		return failure{err}
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "vis-agent",
		Short:         "An embedded-CPython python for agent sandboxes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPythonCmd(), newRuntimeCmd(), newConfigCmd(), newSandboxCmd())
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
	var f failure
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &ee):
		os.Exit(ee.code)
	case errors.As(err, &f):
		fmt.Fprintf(os.Stderr, "vis-agent: %v\n", err)
		os.Exit(1)
	default:
		fmt.Fprintf(os.Stderr, "vis-agent: %v\n", err)
		os.Exit(2)
	}
}
