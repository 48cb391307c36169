// Package clitest is test support for the command packages: streams on
// buffers, and commands built and parsed without the binary (gh's
// pattern: a runF that keeps the options).
package clitest

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
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

// Parse builds a command as gh's tests do, with a runF that keeps its
// options, and runs args through it: the options runF got (nil when the
// command refused the line first) and the command's error.
func Parse[T any](t *testing.T, newCmd func(*cmdutil.Factory, func(*T) error) *cobra.Command, args ...string) (*T, error) {
	t.Helper()
	s, _, _ := Streams(t, nil)
	var got *T
	cmd := newCmd(&cmdutil.Factory{Streams: s, Version: "v-test"}, func(o *T) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return got, cmd.Execute()
}

// WantUsage fails the test unless err is a command line the command
// refused itself (a cmdutil.UsageError, status 2) before its run.
func WantUsage[T any](t *testing.T, line string, got *T, err error) {
	t.Helper()
	if !errors.As(err, new(cmdutil.UsageError)) || got != nil {
		t.Errorf("%s: %v (options %v), want a usage error before the run", line, err, got != nil)
	}
}
