package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// helpWidth is the widest line of any command's help: the flags'
// descriptions are wrapped to it (TestHelp holds every line to it).
const helpWidth = 100

// usage is every command's usage: its command line, subcommands and flags,
// with the flags' descriptions wrapped to helpWidth (cobra's own leaves
// each on one line, of any length).
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		b.WriteString("\n\nFlags:\n" + strings.TrimRight(c.LocalFlags().FlagUsagesWrapped(helpWidth), " \n"))
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\n\nGlobal Flags:\n" + strings.TrimRight(c.InheritedFlags().FlagUsagesWrapped(helpWidth), " \n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}
