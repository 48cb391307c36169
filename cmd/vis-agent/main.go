// Command vis-agent is a drop-in python for agent sandboxes, built on an
// embedded CPython.
package main

import (
	"context"
	"os"

	"github.com/vis-agent/vis-agent/cli"
)

func main() { os.Exit(cli.Main(context.Background(), os.Args[1:], cli.System())) }
