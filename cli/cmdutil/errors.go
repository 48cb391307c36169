package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// ExitError carries an exit status out of a command without cobra
// printing anything more.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Failure is a command that could not do its work: status 1, where a
// command line cobra refuses has status 2.
type Failure struct{ Err error }

func (f Failure) Error() string { return f.Err.Error() }

// UsageError is a bad command line found by a command itself: status 2,
// as for one cobra refuses.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }

// RunE is every command's one error adapter: a UsageError keeps status 2,
// an ExitError its status, and any other error is a Failure (status 1).
func RunE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		var ue UsageError
		var ee ExitError
		if err == nil || errors.As(err, &ue) || errors.As(err, &ee) {
			return err
		}
		return Failure{err}
	}
}

// SubcommandArgs refuses the arguments of a command whose arguments are
// its subcommands, naming the ones the first resembles on the same line
// (cobra's own suggestions take several lines, and it makes none for a
// command that takes no arguments).
func SubcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	// cobra's default distance (2) applies only to its own suggestions.
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
		return fmt.Errorf("unknown command %q for %s: did you mean %s?", args[0], cmd.CommandPath(), strings.Join(near, " or "))
	}
	return fmt.Errorf("unknown command %q for %s (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
}
