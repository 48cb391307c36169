// Package clitest is test support for the command packages: streams on
// buffers, for commands built without the binary.
package clitest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/iostreams"
)

// Streams runs commands on buffers (stdout, stderr), in a temporary
// working folder, with an environment of the test's own (VIS_HOME a
// temporary folder unless env sets it).
func Streams(t *testing.T, env map[string]string) (iostreams.Streams, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errOut bytes.Buffer
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["VIS_HOME"]; !ok {
		env["VIS_HOME"] = t.TempDir()
	}
	return iostreams.Streams{
		In: strings.NewReader(""), Out: &out, Err: &errOut,
		Getenv: func(k string) string { return env[k] },
		Environ: func() []string {
			var kvs []string
			for k, v := range env {
				kvs = append(kvs, k+"="+v)
			}
			return kvs
		},
		Dir: t.TempDir(),
	}, &out, &errOut
}
