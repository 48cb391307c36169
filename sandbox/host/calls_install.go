package host

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/install"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// installOp is install(*specs) (sandbox/hostcalls.InstallOp): the pinned
// uv, run by the host outside the jail, installs the requirements into the
// session's package folder, with the user's settings (uv, the CPython, the
// index, builds), the trust a client gave, and the network of policy.
func (h *Host) installOp(policy protocol.Policy) hostcalls.Op {
	if h.cfg.Install == nil {
		return hostcalls.InstallOp(nil)
	}
	return hostcalls.InstallOp(func(ctx context.Context, reqs []install.Requirement, pins []string) (install.Result, error) {
		opts, err := h.cfg.Install()
		if err != nil {
			return install.Result{}, hostcalls.Errorf("RuntimeError", "install: %v", err)
		}
		h.mu.Lock()
		opts.Environ = withTrust(opts.Environ, h.trust)
		h.mu.Unlock()
		opts.Network = policy.Network
		np, err := h.proxyFor(policy)
		if err == nil && np != nil && !install.LocalIndex(opts.IndexURL) {
			// The allow list holds for uv too: it goes through the proxy
			// (a local index, the user's own, is reached as without the
			// network).
			if opts.Proxy, err = np.local(); err != nil {
				return install.Result{}, hostcalls.Errorf("RuntimeError", "install: %v", err)
			}
		}
		if err := install.CheckNetwork(opts); err != nil {
			return install.Result{}, hostcalls.Errorf("PermissionError", "%v", err)
		}
		if policy.Jail {
			target := realpath.Canonical(opts.Target)
			rw, _ := h.roots(policy)
			for _, root := range rw {
				if realpath.Within(target, root) {
					return install.Result{}, hostcalls.Errorf("PermissionError", "install: the session's package folder %s is inside %s, which the session may write; uv is not run on it", opts.Target, root)
				}
			}
		}
		if err := h.checkDisk("install"); err != nil {
			return install.Result{}, err
		}
		defer h.disk.forget()
		// A standby imported from the environment install() changes.
		h.discardStandby()
		if opts.Proxy != "" {
			np.takeRefused()
		}
		res, err := h.installs.run(ctx, opts, reqs, pins, h.done, h.cfg.Log)
		if err != nil && opts.Proxy != "" {
			if why := np.takeRefused(); why != "" {
				err = fmt.Errorf("%w (the session's proxy: %s)", err, why)
			}
		}
		return res, err
	})
}

// installs runs one install at a time (a child retired mid-install may
// leave its uv stopping while the next child's starts), and after each the
// bytecode compile of the package folder, in the background: the install
// returns without waiting for it, the next one stops it first.
type installs struct {
	mu sync.Mutex // held by an install or a compile

	cmu       sync.Mutex
	stop      context.CancelFunc // the running compile's
	compiling chan struct{}      // closed when it ended
}

func (in *installs) run(ctx context.Context, opts install.Options, reqs []install.Requirement, pins []string,
	hostDone <-chan struct{}, log io.Writer) (install.Result, error) {
	in.stopCompile()
	in.mu.Lock()
	res, err := install.Run(ctx, opts, reqs, pins)
	in.mu.Unlock()
	if err == nil && len(res.Installed)+len(res.InBase) > 0 {
		in.compile(opts, hostDone, log)
	}
	return res, err
}

// compile starts the bytecode compile, stopped by the next install or the
// host's end; a failure goes to the host's log.
func (in *installs) compile(opts install.Options, hostDone <-chan struct{}, log io.Writer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	in.cmu.Lock()
	in.stop, in.compiling = cancel, done
	in.cmu.Unlock()
	go func() {
		select {
		case <-hostDone:
			cancel()
		case <-done:
		}
	}()
	go func() {
		defer close(done)
		defer cancel()
		in.mu.Lock()
		defer in.mu.Unlock()
		if err := install.Compile(ctx, opts); err != nil {
			fmt.Fprintf(log, "vis-agent sandbox host: %v\n", err)
		}
	}()
}

// stopCompile stops a running compile and waits for its end.
func (in *installs) stopCompile() {
	in.cmu.Lock()
	stop, done := in.stop, in.compiling
	in.stop, in.compiling = nil, nil
	in.cmu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// withTrust is environ with its trust and proxy variables replaced by
// those of trust, when a client said which (nil: environ as it is).
func withTrust(environ, trust []string) []string {
	if trust == nil {
		return environ
	}
	out := make([]string, 0, len(environ)+len(trust))
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); !session.Trust(k) {
			out = append(out, kv)
		}
	}
	return append(out, trust...)
}
