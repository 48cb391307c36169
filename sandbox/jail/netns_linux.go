package jail

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// checkLoopbackOnly refuses to go on unless the process's network
// namespace has no interface but the loopback (/proc/self/net/dev lists
// those of the namespace the process is in): an allow list is kept by
// the namespace, so a process outside one would have the whole network.
func checkLoopbackOnly() error {
	data, err := os.ReadFile("/proc/self/net/dev")
	if err != nil {
		return fmt.Errorf("the allow list's network namespace: %w", err)
	}
	var others []string
	for _, line := range strings.Split(string(data), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if name = strings.TrimSpace(name); ok && name != "lo" && !strings.Contains(name, "|") {
			others = append(others, name)
		}
	}
	if len(others) > 0 {
		why := "was not made"
		if e := NetworkNamespaceErr(); e != nil {
			why = "could not be made: " + e.Error()
		}
		return fmt.Errorf("the allow list needs a network namespace of the process's own, which %s (interfaces %s are in reach): run with the network on or off, or as root, or where unprivileged user namespaces are allowed", why, strings.Join(others, ", "))
	}
	return nil
}

// ProxyListener makes the listener of a proxied network in the process's
// own network namespace, at 127.0.0.1:port (0: any free port), and
// returns it as a file to hand to the host, with the port it got. It is
// a plain TCP socket, never MPTCP (Landlock's TCP rules do not cover it).
func ProxyListener(port int) (*os.File, int, error) {
	if err := checkLoopbackOnly(); err != nil {
		return nil, 0, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, 0, fmt.Errorf("the proxy's listener: %w", err)
	}
	f := os.NewFile(uintptr(fd), "proxy listener")
	addr := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(fd, addr); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("the proxy's listener at 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("the proxy's listener: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	in4, ok := sa.(*unix.SockaddrInet4)
	if err != nil || !ok {
		f.Close()
		return nil, 0, errors.New("the proxy's listener has no port")
	}
	return f, in4.Port, nil
}

// SendListener hands f to the other end of the unix socket link (one
// byte with the descriptor attached).
func SendListener(link int, f *os.File) error {
	rights := unix.UnixRights(int(f.Fd()))
	if err := unix.Sendmsg(link, []byte{'L'}, rights, nil, 0); err != nil {
		return fmt.Errorf("hand the proxy's listener to the host: %w", err)
	}
	return nil
}

// ReceiveListener reads a listener SendListener sent on conn.
func ReceiveListener(conn *net.UnixConn) (net.Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("receive the proxy's listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || n != 1 || len(msgs) != 1 {
		return nil, errors.New("receive the proxy's listener: no descriptor came")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, errors.New("receive the proxy's listener: not one descriptor")
	}
	f := os.NewFile(uintptr(fds[0]), "proxy listener")
	defer f.Close()
	// Only a listening TCP socket of the loopback serves.
	if v, err := unix.GetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v != 1 {
		return nil, errors.New("receive the proxy's listener: the descriptor is not a listening socket")
	}
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("receive the proxy's listener: %w", err)
	}
	return l, nil
}

// HandListener makes the listener of a proxied network at
// 127.0.0.1:port (0: any) and hands it over link; the process keeps no
// copy. It returns the port.
func HandListener(link, port int) (int, error) {
	// A vis-agent this process runs must not make a namespace again.
	os.Unsetenv(protocol.NetworkEnv)
	f, port, err := ProxyListener(port)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return port, SendListener(link, f)
}
