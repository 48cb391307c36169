package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/pyrun"
)

// RuntimeOptions are `vis-agent runtime`'s flag.
type RuntimeOptions struct {
	Streams Streams
	Forget  bool
}

// NewCmdRuntime is `vis-agent runtime`; runF (nil: runRuntime) runs it.
func NewCmdRuntime(f *cmdutil.Factory, runF func(*RuntimeOptions) error) *cobra.Command {
	opts := &RuntimeOptions{Streams: f.Streams}
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Show which CPython vis-agent python loads, and from where",
		Args:  cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runRuntime(opts)
		}),
	}
	cmd.Flags().BoolVar(&opts.Forget, "forget", false, "forget the recorded runtime and find the machine's CPython again")
	return cmd
}

func runRuntime(opts *RuntimeOptions) error {
	s := opts.Streams
	record := s.Layout().RuntimeRecord()
	if opts.Forget {
		if err := os.Remove(record); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("forget the recorded runtime: %w", err)
		}
	}
	lib, choice, inst, err := pyrun.LoadRuntime(s)
	if err != nil {
		return err
	}
	w := s.Out
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
