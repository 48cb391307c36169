package install

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/headbuf"
)

// Options are what one install runs with. Every field comes from the user
// (flags, config.toml, the environment the session was started from) or
// from the session's folder, never from the block.
type Options struct {
	// UV is the pinned uv.
	UV string
	// Python is the CPython installation's python: uv takes the tags and
	// markers from it, and compiles the bytecode with it. Never the
	// project's .venv/bin/python, which the session may rewrite.
	Python string
	// Target is the session's package folder for this CPython version.
	Target string
	// IndexURL is python.index_url of the user's config.toml ("": uv's
	// default, or the one of UVConfig).
	IndexURL string
	// UVConfig is the user's uv.toml ("": uv reads no configuration file;
	// a project's is never read).
	UVConfig string
	// AllowBuilds lets uv build source distributions (sandbox.allow_builds):
	// a build runs the package's setup code outside the jail.
	AllowBuilds bool
	// Network is the session's policy: without it only a local index (a
	// file:// or loopback URL) is asked.
	Network bool
	// Environ is the host's environment, from which uv's is built.
	Environ []string
	// Proxy, when set, is the proxy of a session whose network is an
	// allow list (an http:// URL): uv reaches the index through it, so
	// the index and its files hosts must be on the list.
	Proxy string
	// Keep is the environment's variables uv is given (HOME, proxies,
	// certificates); the rest is dropped.
	Keep func(name string) bool
}

// Dist is an installed distribution.
type Dist struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Result is what an install did, for the block.
type Result struct {
	// Installed are the distributions new in the session's folder;
	// InBase those installed there too whose copy in the base environment
	// comes first on sys.path (the same version: they are pinned to it).
	Installed []Dist `json:"installed"`
	InBase    []Dist `json:"in_base"`
	// Removed are versions the install replaced in the session's folder.
	Removed []Dist  `json:"removed"`
	Seconds float64 `json:"seconds"`
	Folder  string  `json:"folder"`
	// Output is the end of uv's output (at most tailLines lines).
	Output string `json:"output"`
}

// Bounds of what is kept of uv's output.
const (
	tailLines  = 40
	lineBytes  = 400
	maxDists   = 5000
	errorBytes = 1500
)

// MaxBase bounds the base environment's pins a block may send.
const MaxBase = 20000

// ParsePins checks the base environment's distributions, as the block
// lists them (name==version), for uv's constraints: what the layer
// installs agrees with what the session already imports.
func ParsePins(pins []string) ([]string, error) {
	if len(pins) > MaxBase {
		return nil, fmt.Errorf("install: %d base distributions; at most %d", len(pins), MaxBase)
	}
	out := make([]string, 0, len(pins))
	for _, p := range pins {
		if !grammar().pin.MatchString(p) {
			return nil, fmt.Errorf("install: %s is not a name==version pin of the base environment", quoteSpec(p))
		}
		if v := p[strings.Index(p, "==")+2:]; grammar().version.FindString(v) != v {
			continue // not a PEP 440 version: uv could not read it
		}
		out = append(out, p)
	}
	return out, nil
}

// LocalIndex reports whether an index URL stays on this machine: a
// file:// URL, or http(s) on a loopback address or localhost.
func LocalIndex(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "file":
		return true
	case "http", "https":
		host := u.Hostname()
		if host == "localhost" {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

// CheckNetwork refuses an install that would leave the machine from a
// session without the network: only a local index is asked then.
func CheckNetwork(opts Options) error {
	if opts.Network || LocalIndex(opts.IndexURL) {
		return nil
	}
	return errors.New("install: the session has no network (--no-network or sandbox.network = false); " +
		"install() then asks only a local index: python.index_url = a file:// or loopback URL in ~/.vis/config.toml")
}

// Run installs the requirements (checked by ParseRequirement) into
// opts.Target, pinned to the base environment's versions (pins, checked
// by ParsePins). ctx's end stops uv (and whatever it started).
func Run(ctx context.Context, opts Options, reqs []Requirement, pins []string) (Result, error) {
	res := Result{Folder: opts.Target, Installed: []Dist{}, InBase: []Dist{}, Removed: []Dist{}}
	if len(reqs) == 0 {
		return res, errors.New("install: no requirement given, such as install(\"pandas>=2\")")
	}
	if len(reqs) > MaxSpecs {
		return res, fmt.Errorf("install: %d requirements; at most %d in one call", len(reqs), MaxSpecs)
	}
	if err := CheckNetwork(opts); err != nil {
		return res, err
	}
	// No --compile-bytecode: compiling pandas and matplotlib took three
	// times as long as installing them; Compile does it afterwards.
	args := []string{"pip", "install", "--python", opts.Python, "--target", opts.Target,
		"--no-progress", "--color", "never"}
	if opts.UVConfig != "" && opts.Network {
		args = append(args, "--config-file", opts.UVConfig)
	} else {
		args = append(args, "--no-config")
	}
	if opts.IndexURL != "" {
		args = append(args, "--default-index", opts.IndexURL)
	}
	if !opts.AllowBuilds {
		args = append(args, "--only-binary", ":all:")
	}
	if len(pins) > 0 {
		f, err := os.CreateTemp("", "vis-install-base-*.txt")
		if err != nil {
			return res, fmt.Errorf("install: write the base environment's pins: %w", err)
		}
		defer os.Remove(f.Name())
		_, err = io.WriteString(f, strings.Join(pins, "\n")+"\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return res, fmt.Errorf("install: write the base environment's pins: %w", err)
		}
		args = append(args, "--constraints", f.Name())
	}
	args = append(args, "--")
	for _, r := range reqs {
		args = append(args, r.Text)
	}
	if err := os.MkdirAll(opts.Target, 0o755); err != nil {
		return res, fmt.Errorf("install: make the session's package folder: %w", err)
	}

	cmd := command(ctx, opts, opts.UV, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, fmt.Errorf("install: %w", err)
	}
	cmd.Stderr = cmd.Stdout // one stream, in the order uv wrote it
	start := time.Now()
	if err := start1(cmd); err != nil {
		return res, fmt.Errorf("install: run uv: %w", err)
	}
	tail := read(out, &res)
	err = cmd.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Output = strings.Join(tail, "\n")
	if ctx.Err() != nil {
		return res, fmt.Errorf("install: stopped (%w)", ctx.Err())
	}
	if err != nil {
		return res, fmt.Errorf("install: uv failed (%w): %s%s", err, summary(tail), tlsHint(tail))
	}
	base := map[string]bool{}
	for _, p := range pins {
		base[Normalize(p[:strings.Index(p, "==")])] = true
	}
	kept := res.Installed[:0:0]
	for _, d := range res.Installed {
		if base[Normalize(d.Name)] {
			res.InBase = append(res.InBase, d)
		} else {
			kept = append(kept, d)
		}
	}
	res.Installed = kept
	return res, nil
}

// command is name run for opts: in the package folder (never the
// workspace: uv reads no project of it), with the built environment, in a
// process group of its own that ctx's end kills whole.
func command(ctx context.Context, opts Options, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = opts.Target
	cmd.Env = environ(opts)
	// Pdeathsig: a host killed outright (kill -9) takes uv or the
	// compile with it (the compile's pool workers, in its group, end
	// after the file each has in hand: only a stop kills the group).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// start1 starts cmd with its standard streams and no other descriptor.
func start1(cmd *exec.Cmd) error {
	if err := closeInherited(); err != nil {
		return err
	}
	return cmd.Start()
}

// Compile writes the bytecode of the package folder's modules, with the
// CPython that runs them: the session cannot write it there itself (the
// folder is read-only to it) and would otherwise compile every module it
// imports again in each new process. Modules compiled already are skipped;
// ctx's end stops it. Only compiled, never run.
func Compile(ctx context.Context, opts Options) error {
	cmd := command(ctx, opts, opts.Python, "-I", "-S", "-m", "compileall", "-q", "-j", "0", opts.Target)
	var tail headbuf.Writer
	tail.Max = errorBytes
	cmd.Stdout, cmd.Stderr = &tail, &tail
	if err := start1(cmd); err != nil {
		return fmt.Errorf("compile the session's packages: %w", err)
	}
	// In the background: the session's own blocks come first (its
	// workers, forked later, inherit the priority).
	syscall.Setpriority(syscall.PRIO_PGRP, cmd.Process.Pid, 10)
	if err := cmd.Wait(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("compile the session's packages: %w: %s", err, strings.TrimSpace(string(tail.Bytes)))
	}
	return nil
}

// environ is uv's environment: the variables opts.Keep accepts, then the
// ones vis-agent sets.
func environ(opts Options) []string {
	var env []string
	for _, kv := range opts.Environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && opts.Keep != nil && opts.Keep(k) {
			env = append(env, kv)
		}
	}
	// The system's trust store (where a company that inspects TLS puts its
	// authority, as pip reads it), besides SSL_CERT_FILE and SSL_CERT_DIR
	// when the host has them; uv's own roots alone refuse such a network.
	env = append(env, "UV_PYTHON_DOWNLOADS=never", "NO_COLOR=1", "UV_SYSTEM_CERTS=1")
	if opts.Proxy != "" {
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
			env = append(env, k+"="+opts.Proxy, strings.ToLower(k)+"="+opts.Proxy)
		}
		env = append(env, "NO_PROXY=", "no_proxy=")
	}
	return env
}

// read parses uv's output as it comes: the distributions into res, and the
// last tailLines lines (each cut to lineBytes) as the tail.
func read(r io.Reader, res *Result) []string {
	var tail []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Split(scanLines)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := grammar().distLine.FindStringSubmatch(line); m != nil {
			d := Dist{Name: m[2], Version: m[3]}
			if m[1] == "+" && len(res.Installed) < maxDists {
				res.Installed = append(res.Installed, d)
			} else if m[1] == "-" && len(res.Removed) < maxDists {
				res.Removed = append(res.Removed, d)
			}
		}
		if len(line) > lineBytes {
			line = line[:lineBytes] + "…"
		}
		tail = append(tail, line)
		if len(tail) > tailLines {
			tail = tail[1:]
		}
	}
	io.Copy(io.Discard, r) // past a line too long to scan
	return tail
}

// scanLines is bufio.ScanLines, but a line longer than the buffer is cut
// rather than ending the scan.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	adv, tok, err := bufio.ScanLines(data, atEOF)
	if adv == 0 && tok == nil && err == nil && len(data) >= 1<<20 {
		return len(data), data[:lineBytes], nil
	}
	return adv, tok, err
}

// summary is uv's error on one line: its lines after the interpreter's,
// joined, bounded.
func summary(tail []string) string {
	var parts []string
	for _, l := range tail {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "Using CPython") || strings.HasPrefix(l, "Using Python") {
			continue
		}
		parts = append(parts, l)
	}
	s := strings.Join(parts, " ")
	if len(s) > errorBytes {
		s = s[:errorBytes] + "…"
	}
	if s == "" {
		s = "no output"
	}
	return s
}

// tlsHint is the way out of a certificate uv could not verify, "" for
// another failure: uv's own hint names a flag install() does not take.
func tlsHint(tail []string) string {
	for _, l := range tail {
		if strings.Contains(l, "invalid peer certificate") || strings.Contains(l, "certificate verify failed") {
			return " (the index's certificate is signed by an authority neither the system's trust store nor SSL_CERT_FILE holds: " +
				"add it to the system's store, or set SSL_CERT_FILE to a bundle with it where the client runs (sandbox run, the MCP server's env): the next block takes it)"
		}
	}
	return ""
}

// Normalize is a distribution name as PEP 503 compares it.
func Normalize(name string) string {
	return strings.ToLower(grammar().separators.ReplaceAllString(name, "-"))
}
