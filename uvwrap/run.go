package uvwrap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mattn/go-isatty"
)

// Environ is the environment uv runs with: base, plus the embedded
// CPython as uv's interpreter (UV_PYTHON), no interpreter downloads
// behind the user's back (UV_PYTHON_DOWNLOADS=never) and the configured
// index (UV_DEFAULT_INDEX), each unless the user already chose. A --python
// option on uv's command line wins over UV_PYTHON, as in uv.
func Environ(base []string, python, indexURL string) []string {
	var env []string
	chosen := map[string]bool{}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			// An empty value is no choice; it is replaced below rather than
			// left first in the list, where getenv would find it.
			continue
		}
		chosen[k] = true
		env = append(env, kv)
	}
	if python != "" && !chosen["UV_PYTHON"] {
		env = append(env, "UV_PYTHON="+python)
	}
	if !chosen["UV_PYTHON_DOWNLOADS"] {
		env = append(env, "UV_PYTHON_DOWNLOADS=never")
	}
	if indexURL != "" && !chosen["UV_DEFAULT_INDEX"] && !chosen["UV_INDEX_URL"] {
		env = append(env, "UV_DEFAULT_INDEX="+indexURL)
	}
	return env
}

// Exec replaces this process with uv: uv then has the user's standard
// streams, terminal, signals and exit status as if started directly.
func Exec(uv string, args, env []string) error {
	argv := append([]string{"uv"}, args...)
	if err := syscall.Exec(uv, argv, env); err != nil {
		return fmt.Errorf("run %s: %w", uv, err)
	}
	return nil // not reached
}

// Run runs uv as a child in dir with the user's standard streams and
// returns its exit status. Signals that stop this process are passed on:
// Ctrl-C on a terminal reaches uv directly (it is in the terminal's process
// group), others, such as a SIGTERM sent to vis-agent, are forwarded. When
// uv is killed by a signal, Run returns 128 + its number, as a shell does.
func Run(uv, dir string, args, env []string) (int, error) {
	cmd := exec.Command(uv, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("run %s: %w", uv, err)
	}
	fromTerminal := isatty.IsTerminal(os.Stdin.Fd())
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != syscall.SIGINT || !fromTerminal {
					cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, fmt.Errorf("run %s: %w", uv, err)
}
