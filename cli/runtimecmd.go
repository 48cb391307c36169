package cli

import (
	"errors"
	"fmt"
	"github.com/vis-agent/vis-agent/pyrun"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

func newRuntimeCmd(s Streams) *cobra.Command {
	var forget bool
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Show which CPython vis-agent python loads, and from where",
		Args:  cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			record := s.Layout().RuntimeRecord()
			if forget {
				if err := os.Remove(record); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("forget the recorded runtime: %w", err)
				}
			}
			lib, choice, inst, err := pyrun.LoadRuntime(s)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "library:    %s\n", lib.Path)
			fmt.Fprintf(w, "source:     %s\n", choice.Source)
			fmt.Fprintf(w, "version:    %s\n", lib.Version)
			fmt.Fprintf(w, "prefix:     %s\n", inst.Prefix)
			fmt.Fprintf(w, "executable: %s\n", inst.Executable)
			if inst.Home != "" {
				fmt.Fprintf(w, "home:       %s\n", inst.Home)
			}
			fmt.Fprintf(w, "record:     %s\n", recordState(record, choice))
			fmt.Fprintf(w, "shared:     %s\n", s.Layout().SharedEnvironment(lib.Version.Short()))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&forget, "forget", false, "forget the recorded runtime and find the machine's CPython again")
	return cmd
}

// recordState says what the runtime record holds: its path when it names
// the library in use, else why it does not (a record that could not be
// written is not shown as if it were there).
func recordState(record string, choice findpython.Choice) string {
	rec, err := findpython.ReadRecord(record)
	switch {
	case err == nil && rec.Library == choice.Library:
		return record
	case choice.Source == findpython.SourceEnv || choice.Source == findpython.SourceBundle:
		return fmt.Sprintf("not used (the library comes from %s)", map[string]string{findpython.SourceEnv: findpython.SourceEnv, findpython.SourceBundle: "the bundle beside the binary"}[choice.Source])
	case err != nil && choice.Source == findpython.SourceSystem:
		// This run discovered the library and wrote the record, or failed to.
		return fmt.Sprintf("none (%s could not be written; every run looks for CPython again)", record)
	case err != nil:
		return fmt.Sprintf("unreadable (%s: %v)", record, err)
	default:
		return fmt.Sprintf("%s names another library, %s", record, rec.Library)
	}
}
