// Package cli is vis-agent's command line: the root of the cobra command
// tree (Main), the python-style argument parsing of `vis-agent python`,
// `runtime` and `config`. The sandbox's user commands are cli/sandbox's,
// its hidden process commands cli/proc's, and what they share
// cli/cmdutil's.
package cli
