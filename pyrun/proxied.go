package pyrun

import (
	"errors"
	"fmt"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/proxy"
)

// proxyFDEnv marks the inner process of `vis-agent python --allow-host`:
// the descriptor on which it hands its listener for the proxy to the
// outer one, which runs the proxy.
const proxyFDEnv = "VIS_AGENT_PROXY_FD"

// runProxied is `vis-agent python --allow-host ...`: this process runs
// the proxy (deciding with the flags' lists, the user's index for @pypi)
// and the same command again as a child, in a network namespace of its
// own (protocol.NetworkEnv), whose listener it serves; it exits as the child
// does. Refusals are reported on stderr, one line each.
func runProxied(args []string, pa Args, s iostreams.Streams) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(s.Err, "vis-agent python: %v\n", err)
		return code
	}
	st := config.Load(s.Layout().UserConfig())
	allow, err := netpolicy.Expand(pa.Vis.AllowHosts, st.IndexURL.Value)
	if err == nil {
		pa.Vis.DenyHosts, err = netpolicy.Expand(pa.Vis.DenyHosts, st.IndexURL.Value)
	}
	var rules netpolicy.Rules
	if err == nil {
		rules, err = netpolicy.Parse(allow, pa.Vis.DenyHosts, "")
	}
	if err != nil {
		return fail(2, fmt.Errorf("%w (see vis-agent python --help)", err))
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(1, err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(1, fmt.Errorf("the proxy's link: %w", err))
	}
	childEnd := os.NewFile(uintptr(fds[1]), "proxy link")
	hostFile := os.NewFile(uintptr(fds[0]), "proxy link")
	conn, err := net.FileConn(hostFile)
	hostFile.Close()
	if err != nil {
		childEnd.Close()
		return fail(1, fmt.Errorf("the proxy's link: %w", err))
	}
	defer conn.Close()
	cmd := exec.Command(exe, append([]string{"python"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.In, s.Out, s.Err
	cmd.Env = append(s.Environ(), protocol.NetworkEnv+"=1", proxyFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{childEnd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The terminal's interrupt reaches the child itself (one process
	// group); a signal sent to this process is passed on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	err = cmd.Start()
	childEnd.Close()
	if err != nil {
		return fail(1, err)
	}
	uc := conn.(*net.UnixConn)
	uc.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := jail.ReceiveListener(uc)
	if err == nil {
		defer l.Close()
		srv := proxy.New(proxy.Config{Rules: rules, Upstream: func(u *url.URL) (*url.URL, error) {
			return http.ProxyFromEnvironment(&http.Request{URL: u})
		}, Log: func(d proxy.Decision) {
			if !d.Allowed {
				fmt.Fprintf(s.Err, "vis-agent python: %s\n", d)
			}
		}})
		defer srv.Close()
		go srv.Serve(l)
	}
	// A child that could not make its listener says why itself, and exits.
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGTERM || sig == syscall.SIGHUP {
				cmd.Process.Signal(sig)
			}
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	case err != nil:
		return fail(1, err)
	}
	return 0
}

// proxiedNetwork is the inner process's side of runProxied: before the
// program starts, its listener goes to the outer process and the kernel
// layer keeps the process and everything it starts in its network
// namespace, whose only way out is that proxy.
func proxiedNetwork(stderr io.Writer) error {
	fd, err := strconv.Atoi(os.Getenv(proxyFDEnv))
	if err != nil || fd < 3 {
		return fmt.Errorf("--allow-host: %s=%q is not a descriptor", proxyFDEnv, os.Getenv(proxyFDEnv))
	}
	os.Unsetenv(proxyFDEnv)
	port, err := jail.HandListener(fd, 0)
	syscall.Close(fd)
	if err != nil {
		return fmt.Errorf("--allow-host: %w", err)
	}
	for _, kv := range proxy.Environ(port) {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	st, err := jail.Apply(jail.Policy{ProxyPort: port})
	if err != nil {
		return fmt.Errorf("--allow-host: %w", err)
	}
	for _, m := range st.Missing {
		fmt.Fprintf(stderr, "vis-agent python: --allow-host: %s\n", m)
	}
	return nil
}
