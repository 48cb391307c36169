package client

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/vis-agent/vis-agent/internal/fsutil"
)

// HostEnv names the environment variable that gives --host's default.
const HostEnv = "VIS_SANDBOX_HOST"

// defaultProgram is the remote vis-agent when the URL names none: the
// one on the remote PATH.
const defaultProgram = "vis-agent"

// Target is a machine (or container) whose sessions a client reaches by
// running `vis-agent sandbox connect` there with an engine the user
// already runs: ssh, kubectl exec or docker/podman exec. The engine's own
// configuration and authentication apply; nothing of ours is added.
type Target struct {
	URL    string // as the user gave it, for messages
	Scheme string // "ssh", "kubectl", "docker" or "podman"
	// ssh: the destination and its user and port ("" when not given).
	User, Host, Port string
	// kubectl: the pod, its namespace, container and the kubeconfig
	// context ("" when not given); docker and podman: Container.
	Context, Namespace, Pod, Container string
	// Program is the vis-agent to run there.
	Program string
}

// ParseTarget reads a --host URL:
//
//	ssh://[user@]host[:port][/path/to/vis-agent]
//	kubectl://namespace/pod[/container][?context=NAME]
//	docker://container   podman://container
//
// Every part becomes one argument of the engine's command line, after its
// options end, and is checked so that none can read as an option or hold
// a character the engines give a meaning to.
func ParseTarget(raw string) (Target, error) {
	t := Target{URL: raw, Program: defaultProgram}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return t, fmt.Errorf("--host %q: use ssh://[user@]host[:port][/path/to/vis-agent], kubectl://namespace/pod[/container] or docker://container", raw)
	}
	t.Scheme = scheme
	var err error
	switch scheme {
	case "ssh":
		err = t.parseSSH(raw)
	case "kubectl":
		err = t.parseKubectl(rest)
	case "docker", "podman":
		if !validName(rest, 253) {
			err = errors.New("give a container name or id (letters, digits, . _ -)")
		}
		t.Container = rest
	default:
		err = fmt.Errorf("unknown scheme %q: use ssh, kubectl, docker or podman", scheme)
	}
	if err != nil {
		return t, fmt.Errorf("--host %q: %w", raw, err)
	}
	return t, nil
}

func (t *Target) parseSSH(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return errors.New("an ssh URL has no query or fragment")
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return errors.New("no password in the URL: ssh authenticates with your keys, agent or config")
		}
		t.User = u.User.Username()
		if !validName(t.User, 64) {
			return fmt.Errorf("invalid user %q", t.User)
		}
	}
	t.Host = u.Hostname()
	if !validHost(t.Host) {
		return fmt.Errorf("invalid host %q", t.Host)
	}
	if t.Port = u.Port(); t.Port != "" {
		if n, err := strconv.Atoi(t.Port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("invalid port %q", t.Port)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return errors.New("an empty port")
	}
	if p := u.Path; p != "" && p != "/" {
		if strings.ContainsAny(p, "\x00\n\r") {
			return errors.New("the program's path holds a control character")
		}
		t.Program = p
	}
	return nil
}

func (t *Target) parseKubectl(rest string) error {
	rest, query, _ := strings.Cut(rest, "?")
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return errors.New("a bad query")
		}
		for k, v := range q {
			if k != "context" || len(v) != 1 {
				return fmt.Errorf("unknown query %q: only context=NAME", k)
			}
		}
		t.Context = q.Get("context")
		if t.Context == "" || strings.HasPrefix(t.Context, "-") || strings.ContainsFunc(t.Context, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return fmt.Errorf("invalid context %q", t.Context)
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return errors.New("give namespace/pod or namespace/pod/container")
	}
	t.Namespace, t.Pod = parts[0], parts[1]
	if len(parts) == 3 {
		t.Container = parts[2]
	}
	for _, p := range parts {
		if !validName(p, 253) {
			return fmt.Errorf("invalid name %q (letters, digits, . _ -)", p)
		}
	}
	return nil
}

// validName is a user, namespace, pod or container name: letters, digits,
// '.', '_' and '-', not starting with '-' or '.'.
func validName(s string, max int) bool { return fsutil.PlainName(s, max) }

// validHost is a host name, an IPv4 address or an IPv6 one (its brackets
// already gone).
func validHost(h string) bool {
	if strings.Contains(h, ":") {
		for i := 0; i < len(h); i++ {
			c := h[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.') {
				return false
			}
		}
		return true
	}
	return validName(h, 253) && !strings.Contains(h, "_")
}

// Command is the command line that runs `vis-agent sandbox connect args`
// on the target.
func (t Target) Command(args []string) []string {
	return t.Engine(append([]string{t.Program, "sandbox", "connect"}, args...))
}

// Engine is the engine's command line that runs argv on the target.
func (t Target) Engine(argv []string) []string {
	switch t.Scheme {
	case "ssh":
		cmd := []string{"ssh", "-T"}
		if t.User != "" {
			cmd = append(cmd, "-l", t.User)
		}
		if t.Port != "" {
			cmd = append(cmd, "-p", t.Port)
		}
		// ssh hands the remote command to the user's shell there: one
		// string, every word quoted.
		quoted := make([]string, len(argv))
		for i, a := range argv {
			quoted[i] = shellQuote(a)
		}
		return append(cmd, "--", t.Host, strings.Join(quoted, " "))
	case "kubectl":
		cmd := []string{"kubectl"}
		if t.Context != "" {
			cmd = append(cmd, "--context="+t.Context)
		}
		cmd = append(cmd, "exec", "-i", "--namespace="+t.Namespace)
		if t.Container != "" {
			cmd = append(cmd, "--container="+t.Container)
		}
		return append(append(cmd, t.Pod, "--"), argv...)
	default: // docker, podman
		return append([]string{t.Scheme, "exec", "-i", t.Container}, argv...)
	}
}

// shellQuote is s as one word of a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
