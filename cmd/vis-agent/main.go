// Command vis-agent is a drop-in python for agent sandboxes, built on an
// embedded CPython.
package main

import "github.com/vis-agent/vis-agent/cli"

func main() { cli.Execute() }
