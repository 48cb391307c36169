// Package tools runs the tools a sandbox session offers its code from the
// host: cat, grep and patch on files inside the session's roots, and shell
// commands confined with bubblewrap. Results are plain structs that encode
// to JSON, for the host to hand to the session's Python.
package tools
