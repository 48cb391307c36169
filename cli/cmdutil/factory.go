// Package cmdutil is what vis-agent's command packages share (gh's
// pkg/cmdutil): the Factory every command is built with, the one error
// adapter and its error kinds, and the flags that name a session and its
// jail.
package cmdutil

import (
	"github.com/vis-agent/vis-agent/internal/iostreams"
)

// Streams is what every command takes from the process it runs in
// (iostreams.Streams): commands never read os.Stdin, os.Getenv or
// os.Getwd themselves.
type Streams = iostreams.Streams

// Factory is what every NewCmdXxx is given: the streams of the process
// and vis-agent's version (connect's version mismatch, export's manifest
// and MCP's server info name it).
type Factory struct {
	Streams
	Version string
}
