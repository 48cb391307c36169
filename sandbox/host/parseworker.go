package host

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/headbuf"
	"github.com/vis-agent/vis-agent/sandbox/check"
	"github.com/vis-agent/vis-agent/sandbox/jail"
)

// The host parses no data file (JSON, TOML, YAML) a block wrote: a
// parser's cost on a crafted text is the writer's to choose (a 50 KB
// dotted TOML key took the host past 2 GiB). A short-lived worker process
// (`vis-agent sandbox check-worker`, ServeParseWorker) parses them,
// bounded by the kernel, and is killed at the check's deadline; a text
// that ends it is a line in the block's result.
const (
	// parseWorkerMemory is how much the worker's address space may grow
	// past what it holds when it starts (RLIMIT_AS): the Go runtime and
	// the C library reserve about 1.4 GiB of it before any parse, most of
	// it never backed by memory.
	parseWorkerMemory = 512 << 20
	// parseWorkerCPU caps its CPU time in seconds (RLIMIT_CPU; SIGKILL
	// when it is spent).
	parseWorkerCPU = 2
	// parseTimeout bounds a patch's parse, as maxCheckTime bounds the
	// check after a block.
	parseTimeout = maxCheckTime
)

// ServeParseWorker is the worker's process body: its bounds and jail
// first (no file, no network, no process, no privilege), then the texts
// of its standard input, answered on its standard output.
func ServeParseWorker(in io.Reader, out io.Writer) error {
	for _, l := range []struct {
		resource int
		max      uint64
	}{{unix.RLIMIT_CPU, parseWorkerCPU}, {unix.RLIMIT_FSIZE, 0}} {
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: l.max, Max: l.max}); err != nil {
			return fmt.Errorf("check-worker: set its limits: %w", err)
		}
	}
	start, err := addressSpace()
	if err != nil {
		return fmt.Errorf("check-worker: %w", err)
	}
	// The collector works harder before the address space runs out.
	debug.SetMemoryLimit(parseWorkerMemory / 2)
	if _, err := jail.Apply(jail.Policy{ConfineFiles: true, NoNetwork: true, NoNewProcesses: true,
		NoOtherProcesses: true, DropPrivileges: true, ScopeIPC: true, MemoryBytes: start + parseWorkerMemory}); err != nil {
		return fmt.Errorf("check-worker: %w", err)
	}
	if _, err := io.WriteString(out, workerReady); err != nil {
		return fmt.Errorf("check-worker: %w", err)
	}
	return check.ServeTexts(in, out)
}

// workerReady is the worker's first line: its bounds are in force.
const workerReady = "ready\n"

// addressSpace is the size of the process's address space.
func addressSpace() (uint64, error) {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("read the address space's size: %w", err)
	}
	var pages uint64
	if _, err := fmt.Sscan(string(statm), &pages); err != nil {
		return 0, fmt.Errorf("read the address space's size: %w", err)
	}
	return pages * uint64(os.Getpagesize()), nil
}

// dataText is one text for the worker.
type dataText struct {
	kind check.Kind
	src  string
}

// parseTexts parses texts in worker processes, until deadline: their
// answers in order. A text whose parse ends a worker (its memory or CPU
// bound, the deadline) is unchecked, saying so; the texts after it go to
// a new worker while time is left. A text past check.OverBounds is not
// sent, and no worker starts when none is left.
func (h *Host) parseTexts(deadline time.Time, texts []dataText) []check.Parsed {
	answers := make([]check.Parsed, len(texts))
	var send []int // indexes of the texts to parse
	for i, t := range texts {
		if why := check.OverBounds(t.kind, t.src); why != "" {
			answers[i].Unchecked = why
		} else {
			send = append(send, i)
		}
	}
	for len(send) > 0 {
		if !time.Now().Before(deadline) {
			for _, i := range send {
				answers[i].Unchecked = "the check's time ran out"
			}
			break
		}
		n, err := h.runParseWorker(deadline, texts, send, answers)
		send = send[n:]
		if errors.Is(err, errNoWorker) {
			for _, i := range send {
				answers[i].Unchecked = err.Error()
			}
			break
		}
		if err != nil && len(send) > 0 {
			answers[send[0]].Unchecked = err.Error()
			send = send[1:]
		}
	}
	return answers
}

// runParseWorker parses texts[i] for each i of send in one worker, until
// deadline, into answers: how many it answered, and why it stopped
// before the last.
func (h *Host) runParseWorker(deadline time.Time, texts []dataText, send []int, answers []check.Parsed) (int, error) {
	w, err := h.takeParseWorker(deadline)
	if err != nil {
		return 0, err
	}
	var late atomic.Bool
	timer := time.AfterFunc(time.Until(deadline), func() {
		late.Store(true)
		w.cmd.Process.Kill()
	})
	defer timer.Stop()
	go func() {
		defer w.stdin.Close()
		for _, i := range send {
			if check.WriteText(w.stdin, texts[i].kind, texts[i].src) != nil {
				return
			}
		}
	}()
	n := 0
	for ; n < len(send); n++ {
		a, err := check.ReadParsed(w.stdout)
		if err != nil {
			break
		}
		answers[send[n]] = a
	}
	// The next block's worker starts in a moment, off this one's path.
	time.AfterFunc(spareDelay, h.spareParseWorker)
	if n == len(send) {
		go w.cmd.Wait() // it exits at the end of its input
		return n, nil
	}
	w.cmd.Process.Kill()
	return n, workerFailure(late.Load(), w.cmd.Wait(), w.stderr.Bytes)
}

// parseWorker is a worker process, started and waiting for texts.
type parseWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *headbuf.Writer
}

// spareIdle is how long a spare worker waits for a block's texts;
// spareDelay, how long after a worker was used the next one starts, so
// that its start does not take the CPU from the answer of the block (or
// the patch) that used it.
const (
	spareIdle  = time.Minute
	spareDelay = 50 * time.Millisecond
)

// parseWorkers keeps a spare worker once one was used, so that the
// next block that changed data files does not wait for a process to
// start (about 7 ms); each worker still parses one block's texts only.
type parseWorkers struct {
	mu    sync.Mutex
	spare *parseWorker
}

// takeParseWorker is the spare worker, or a new one ready by deadline.
func (h *Host) takeParseWorker(deadline time.Time) (*parseWorker, error) {
	h.workers.mu.Lock()
	w := h.workers.spare
	h.workers.spare = nil
	h.workers.mu.Unlock()
	if w != nil {
		return w, nil
	}
	return h.startParseWorker(deadline)
}

// spareParseWorker starts a spare worker, ended after spareIdle unused.
func (h *Host) spareParseWorker() {
	w, err := h.startParseWorker(time.Now().Add(parseTimeout))
	if err != nil {
		return
	}
	h.workers.mu.Lock()
	if h.workers.spare != nil {
		h.workers.mu.Unlock()
		w.end()
		return
	}
	h.workers.spare = w
	h.workers.mu.Unlock()
	time.AfterFunc(spareIdle, func() {
		h.workers.mu.Lock()
		idle := h.workers.spare == w
		if idle {
			h.workers.spare = nil
		}
		h.workers.mu.Unlock()
		if idle {
			w.end()
		}
	})
}

// errNoWorker is a worker that did not start: no text is parsed.
var errNoWorker = errors.New("the checker did not start")

// startParseWorker starts `vis-agent sandbox check-worker` and waits
// until it is ready (its bounds in force), at most until deadline. Its
// standard input is the host's only: when the host ends, the worker reads
// its end and exits.
func (h *Host) startParseWorker(deadline time.Time) (*parseWorker, error) {
	cmd := exec.Command(h.cfg.Exe, "sandbox", "check-worker")
	// A built environment: one thread for Go's work, nothing of the host's.
	cmd.Env = []string{"GOMAXPROCS=1"}
	w := &parseWorker{cmd: cmd, stderr: &headbuf.Writer{Max: 4096}}
	cmd.Stderr = w.stderr
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoWorker, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoWorker, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoWorker, err)
	}
	w.stdout = check.NewAnswerReader(stdout)
	timer := time.AfterFunc(time.Until(deadline), func() { cmd.Process.Kill() })
	line, _ := w.stdout.ReadString('\n')
	timer.Stop()
	if line != workerReady {
		cmd.Process.Kill()
		return nil, fmt.Errorf("%w: %s", errNoWorker, workerSaid(cmd.Wait(), w.stderr.Bytes))
	}
	return w, nil
}

// end ends a worker that was given no text.
func (w *parseWorker) end() {
	w.stdin.Close()
	w.cmd.Wait()
}

// workerFailure says why a worker ended before its last answer: late
// when it was killed at the deadline.
func workerFailure(late bool, err error, stderr []byte) error {
	var ee *exec.ExitError
	cpu := time.Duration(0)
	if errors.As(err, &ee) {
		cpu = ee.UserTime() + ee.SystemTime()
	}
	switch {
	case late:
		return fmt.Errorf("its parse passed the check's time (%s)", humanDuration(maxCheckTime))
	// The kernel kills at the limit by the scheduler's count of the
	// worker's time; the user and system times it reports are sampled
	// per tick and, on a loaded machine, fell short by more than 100 ms:
	// a kill past half the limit is the limit's.
	case ee != nil && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL && cpu >= parseWorkerCPU*time.Second/2:
		return fmt.Errorf("its parse passed the checker's bound of %d s of CPU", parseWorkerCPU)
	case strings.Contains(string(stderr), "out of memory") || strings.Contains(string(stderr), "cannot allocate memory"):
		return fmt.Errorf("its parse passed the checker's bound of %d MiB of memory", parseWorkerMemory>>20)
	}
	return fmt.Errorf("the checker stopped: %s", workerSaid(err, stderr))
}

// workerSaid is the first line a worker wrote on its stderr, else how it
// ended.
func workerSaid(err error, stderr []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(string(stderr), "vis-agent: ")), "\n")
	if line == "" {
		line = fmt.Sprint(err)
	}
	return line
}

// parseOne is a check.Parse of one text in a worker, within parseTimeout.
func (h *Host) parseOne(kind check.Kind, src string) (*check.Problem, string) {
	a := h.parseTexts(time.Now().Add(parseTimeout), []dataText{{kind, src}})[0]
	return a.Problem, a.Unchecked
}
