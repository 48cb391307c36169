// Package cli is vis-agent's command line: the cobra command tree, the
// python-style argument parsing of `vis-agent python`, and configuration.
package cli
