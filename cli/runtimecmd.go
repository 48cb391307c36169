package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"
)

func newRuntimeCmd() *cobra.Command {
	var forget bool
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Show which CPython vis-agent python loads, and from where",
		Args:  cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if forget {
				if err := os.Remove(runtimeRecord()); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("forget the recorded runtime: %w", err)
				}
			}
			lib, choice, inst, err := loadRuntime()
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
			fmt.Fprintf(w, "record:     %s\n", runtimeRecord())
			return nil
		}),
	}
	cmd.Flags().BoolVar(&forget, "forget", false, "forget the recorded runtime and find the machine's CPython again")
	return cmd
}
